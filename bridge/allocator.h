#pragma once

// The bridge's memory allocator.
//
// jemalloc, linked into the bridge (allocator_jemalloc.cc says why and how it is set). A
// sanitizer build (bazel --config=asan|ubsan|tsan) uses the C library's instead
// (allocator_system.cc): the sanitizers bring their own malloc and must see every block.

#include <string>

namespace abx::bridge::allocator {

// Gives the free memory the allocator still holds back to the system now: called when
// the last session ends and when the bridge has been idle for a while, so an idle bridge
// is small at once rather than after the allocator's own delay.
void ReleaseFreeMemory();

// Which allocator this build runs on ("jemalloc 5.3.0-0-g...", or "C library").
std::string Name();

}  // namespace abx::bridge::allocator
