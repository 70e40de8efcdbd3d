#pragma once
// Cancellation of one request: set once by $/cancel, by the host going away, or by the
// bridge draining; observed by waits and transfers, and able to run clean-up hooks
// (such as interrupting an execd command) on the thread that cancels.

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <vector>

namespace abx::core {

class CancelToken {
 public:
  void Cancel() {
    std::vector<std::function<void()>> hooks;
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (cancelled_.exchange(true)) return;
      hooks.swap(hooks_);
    }
    cv_.notify_all();
    for (auto& hook : hooks) hook();
  }

  bool cancelled() const { return cancelled_.load(std::memory_order_relaxed); }
  // For transports that poll a flag.
  const std::atomic<bool>* flag() const { return &cancelled_; }

  // Runs `hook` on cancellation (at once if already cancelled).
  void OnCancel(std::function<void()> hook) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (!cancelled_) {
        hooks_.push_back(std::move(hook));
        return;
      }
    }
    hook();
  }

  // Sleeps up to `duration`; returns false when cancelled meanwhile.
  template <typename Duration>
  bool SleepFor(Duration duration) const {
    std::unique_lock<std::mutex> lock(mu_);
    return !cv_.wait_for(lock, duration, [&] { return cancelled_.load(); });
  }

 private:
  mutable std::mutex mu_;
  mutable std::condition_variable cv_;
  std::atomic<bool> cancelled_{false};
  std::vector<std::function<void()>> hooks_;
};

}  // namespace abx::core
