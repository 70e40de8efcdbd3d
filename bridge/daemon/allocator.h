#pragma once

// The bridge's memory allocator.
//
// jemalloc, linked into the bridge (allocator_jemalloc.cc says why and how it is set).
// AddressSanitizer and ThreadSanitizer builds (bazel --config=asan|tsan) use the C
// library's instead (allocator_system.cc): those sanitizers bring their own malloc and
// must see every block. UndefinedBehaviorSanitizer has none, so --config=ubsan keeps
// jemalloc.

#include <string>

namespace abx::daemon::allocator {

// Gives the free memory the allocator still holds back to the system now: called when
// the last session ends and when the bridge has been idle for a while, so an idle bridge
// is small at once rather than after the allocator's own delay.
void ReleaseFreeMemory();

// Which allocator this build runs on ("jemalloc 5.3.0-0-g...", or "C library").
std::string Name();

}  // namespace abx::daemon::allocator
