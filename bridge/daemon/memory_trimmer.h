#pragma once

// Gives an idle bridge's memory back to the system.
//
// While sessions run, the allocator returns freed pages on its own clock
// (bridge/daemon/allocator_jemalloc.cc). Once the bridge has been idle (no session) for a
// while, this gives back the rest, once per idle spell: the allocator's free pages at
// once, and the mapped file pages of code and read-only data the bridge is not running
// (all that start-up ran, and the neighbours the kernel maps around every page touched)
// go back to the page cache (common/file_pages.h). An idle bridge: ~19.5 -> ~5-8 MiB
// resident. The next session maps back what it runs (~8 MiB of it, a few milliseconds of
// minor faults, once).

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <thread>

namespace abx::api {
class ServingState;
}

namespace abx::daemon {

class MemoryTrimmer {
 public:
  struct Options {
    // No session for this long: the memory goes back (once per idle spell).
    std::chrono::milliseconds idle_release_after{5000};
    // Where idleness is read from.
    const api::ServingState* state = nullptr;
  };

  explicit MemoryTrimmer(Options options);
  ~MemoryTrimmer();  // stops the thread

  MemoryTrimmer(const MemoryTrimmer&) = delete;
  MemoryTrimmer& operator=(const MemoryTrimmer&) = delete;

  // Idle spells whose memory was given back so far (for tests).
  int64_t idle_releases() const;

 private:
  void Loop();
  // One look at the daemon's sessions: gives the file pages back once it has been idle
  // long enough.
  void CheckIdle(std::chrono::steady_clock::time_point now);

  const Options options_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;
  // Idleness, as of the last look (the trimmer's thread only).
  int64_t seen_sessions_total_ = -1;
  std::chrono::steady_clock::time_point idle_since_;
  int64_t released_at_sessions_total_ = -1;
  int64_t idle_releases_ = 0;  // guarded by mu_
  std::thread thread_;
};

}  // namespace abx::daemon
