#pragma once

// Gives the bridge's memory back to the system while it runs.
//
// Free heap pages, every few seconds: the bridge runs many threads (gRPC's one per
// session, the request pool), and between live blocks their arenas fill with free space
// that glibc's own trimming (only the top of each heap) never reaches, so RSS creeps up
// (tests/soak). malloc_trim(0) returns whole free pages from the middle of every arena
// too. It takes each arena's lock briefly; at the bridge's heap size a pass costs well
// under a millisecond.
//
// Mapped file pages, once the bridge has been idle (no session) for a while: the code
// and read-only data it has mapped but is not running (all that start-up ran, and the
// neighbours the kernel maps around every page touched) go back to the page cache
// (common/file_pages.h). An idle bridge: ~19.5 -> ~4 MiB resident. The next session maps
// back what it runs (~8 MiB of it, a few milliseconds of minor faults, once).

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <thread>

namespace abx::bridge {

class DaemonState;

class MemoryTrimmer {
 public:
  struct Options {
    // How often free heap pages are given back.
    std::chrono::milliseconds trim_period{5000};
    // No session for this long: the mapped file pages go back too (once per idle spell).
    std::chrono::milliseconds idle_release_after{5000};
    // Where idleness is read from; null: heap trimming only.
    const DaemonState* state = nullptr;
  };

  explicit MemoryTrimmer(Options options);
  ~MemoryTrimmer();  // stops the thread

  MemoryTrimmer(const MemoryTrimmer&) = delete;
  MemoryTrimmer& operator=(const MemoryTrimmer&) = delete;

  // Idle spells whose file pages were given back so far (for tests).
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

}  // namespace abx::bridge
