#pragma once

// What execd can do right now, set by the lifecycle side and read by every execd
// request. Real execd is unreachable while its container starts, hangs while the
// container is frozen (docker pause), and disappears with the container.

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <mutex>

namespace fake_opensandbox {

class SandboxGate {
 public:
  enum class State { kStarting, kRunning, kFrozen, kGone };

  explicit SandboxGate(State initial) : state_(initial) {}

  void Set(State state);
  State Get() const;
  // Blocks while frozen; returns the first other state.
  State WaitWhileFrozen() const;

  // Counts /ping calls; true while the first `ready_after` of them must still fail.
  bool PingShouldFail(int64_t ready_after) { return pings_.fetch_add(1) < ready_after; }

 private:
  mutable std::mutex mutex_;
  mutable std::condition_variable cv_;
  State state_;
  std::atomic<int64_t> pings_{0};
};

}  // namespace fake_opensandbox
