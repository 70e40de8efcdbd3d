#pragma once

// Gives the bridge's free heap pages back to the system every few seconds while it runs.
//
// Why: the bridge runs many threads (gRPC's one per session, the request pool), and
// glibc spreads them over up to 16 arenas. Under many busy sessions the arenas fill with
// free space between live blocks that the per-arena trim (only the top of each heap)
// never reaches, so RSS creeps up (tests/soak). malloc_trim(0) also returns whole free
// pages in the middle of every arena (not the free top of a thread's arena, which only a
// free() above M_TRIM_THRESHOLD trims). It takes each arena's lock
// briefly; at the bridge's heap size a pass costs well under a millisecond.

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <thread>

namespace abx::bridge {

class MemoryTrimmer {
 public:
  explicit MemoryTrimmer(std::chrono::milliseconds period);
  ~MemoryTrimmer();  // stops the thread

  MemoryTrimmer(const MemoryTrimmer&) = delete;
  MemoryTrimmer& operator=(const MemoryTrimmer&) = delete;

 private:
  void Loop();

  const std::chrono::milliseconds period_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;
  std::thread thread_;
};

}  // namespace abx::bridge
