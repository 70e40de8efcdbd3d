#pragma once
// What this machine itself charges for moving one chunk's line between two processes:
// a writer and a reader alone, through a pipe (the host's stdin and stdout of the shim)
// and through a Unix socket (the shim's connection to the bridge). The files scenario
// prints these beside its rows, as the floor under ours that the direct client never
// pays.

#include <cstddef>

namespace abx::bench {

// Median milliseconds per `bytes`, written `rounds` times in one write(2) loop each by
// one thread and read 256 KiB at a time by another. `pipe_bytes` > 0: a pipe enlarged
// to that (0: the kernel's default); -1: a Unix stream socket pair. -1 on failure.
double TransferMs(size_t bytes, int pipe_bytes, int rounds);

}  // namespace abx::bench
