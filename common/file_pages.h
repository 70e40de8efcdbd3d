#pragma once
// Handing back the pages of read-only file mappings (code, read-only data) that a process
// has mapped but is not using.
//
// Why: a daemon's resident code is more than what it runs. Everything its start-up ran
// (static initialisers of gRPC, protobuf, abseil, OpenSSL's set-up through libssh2) stays
// mapped, and every page it touches brings up to 15 neighbours with it (the kernel maps
// up to 64 KiB around each fault from the page cache). An idle bridge had ~17.5 MiB of such
// file pages resident, of which serving a session again maps back ~8 MiB.
//
// MADV_DONTNEED on a private mapping that was never written drops its page-table entries
// only: the pages stay in the page cache (shared with whoever else maps them), no longer
// held by this process, and the next access maps them again with a minor fault. Mappings
// that hold written (copy-on-write) pages, such as relocated read-only data, are left
// alone: dropping those would bring back the file's unrelocated bytes.

#include <cstddef>

namespace abx {

struct ReleasedFilePages {
  size_t mappings = 0;        // mappings whose pages were dropped
  size_t resident_bytes = 0;  // what they had resident just before
};

// Drops the resident pages of every private, non-writable file mapping of this process
// that holds no written page. Reads /proc/self/smaps (a few milliseconds); meant for a
// process that has gone idle.
ReleasedFilePages ReleaseCleanFilePages();

}  // namespace abx
