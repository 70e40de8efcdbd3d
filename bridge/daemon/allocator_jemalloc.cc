// The bridge runs on jemalloc, linked in, rather than on the C library's malloc.
//
// Why: under many busy sessions glibc's malloc let the bridge's memory creep. The live
// heap stayed flat (~3 MiB of small blocks and 45-55 MiB of buffers in flight, traced
// through a 64-session soak), but glibc serves large buffers from whatever free space
// its arenas hold, whose heaps then grew with the fragments left between them: RSS
// crept by ~1 MiB per 100 s through a 600 s soak and had not stopped (tests/soak). No
// setting of glibc's stopped it (mmap and trim thresholds, fewer arenas, no per-thread
// caches, malloc_trim every 5 s; docs/RELIABILITY.md). jemalloc gives freed pages back
// on a clock of its own (the decay below), whatever their neighbours, so the bridge's
// memory follows the work in flight and nothing else: flat through the same soak.
//
// The settings, read by jemalloc when the bridge starts (malloc_conf):
//   background_thread:true — a thread of jemalloc's returns freed pages on time even
//     when nothing allocates (an idle bridge gets small without a trigger);
//   dirty_decay_ms:300 — freed pages are kept for reuse for ~0.3 s before they go back:
//     stream chunks, file bodies and curl's buffers come and go many times a second,
//     and faulting fresh pages in for each cost the stream half its speed (measured at
//     0 ms); longer keeps more memory under load for no further gain
//     (docs/PERFORMANCE.md, "Memory allocator");
//   muzzy_decay_ms:0 — pages go back outright (MADV_DONTNEED) rather than lazily
//     (MADV_FREE pages still count as the bridge's until the kernel needs them);
//   narenas:2, tcache:false — ~100 threads under 64 sessions (gRPC's thread per
//     session, the request pool) on machines of a few cores: per-thread caches and an
//     arena per core would each keep free memory that no other thread reuses.

#include <jemalloc/jemalloc.h>

#include <string>

#include "bridge/daemon/allocator.h"

extern "C" {
// jemalloc reads this string when it initialises (before main).
const char* malloc_conf =
    "background_thread:true,dirty_decay_ms:300,muzzy_decay_ms:0,narenas:2,tcache:false";
}

namespace abx::daemon::allocator {

void ReleaseFreeMemory() {
  // "arena.<MALLCTL_ARENAS_ALL>.purge": every arena's unused dirty pages, now.
  static const std::string kPurgeAll = "arena." + std::to_string(MALLCTL_ARENAS_ALL) + ".purge";
  mallctl(kPurgeAll.c_str(), nullptr, nullptr, nullptr, 0);
}

std::string Name() {
  const char* version = nullptr;
  size_t size = sizeof(version);
  if (mallctl("version", &version, &size, nullptr, 0) != 0 || version == nullptr) {
    return "jemalloc";
  }
  return std::string("jemalloc ") + version;
}

}  // namespace abx::daemon::allocator
