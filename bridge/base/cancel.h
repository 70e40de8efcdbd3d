#pragma once
// Cancellation of one request: set once by $/cancel, by the host going away, or by the
// bridge draining; observed by waits and transfers, and able to run clean-up hooks
// (such as interrupting an execd command) on the thread that cancels.
//
// Nothing polls it: a cancel wakes SleepFor at once through the condition variable, and
// a transfer waiting in the HTTP client through its flag's watch (cancel_flag.h).

#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <vector>

#include "bridge/base/cancel_flag.h"

namespace abx {

class CancelToken {
 public:
  void Cancel() {
    std::vector<std::function<void()>> hooks;
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (!flag_.Set()) return;  // wakes the transfers that watch it
      hooks.swap(hooks_);
    }
    cv_.notify_all();
    for (auto& hook : hooks) hook();
  }

  bool cancelled() const { return flag_.is_set(); }
  // For the HTTP client, whose waits watch it.
  const CancelFlag* flag() const { return &flag_; }

  // Runs `hook` on cancellation (at once if already cancelled).
  void OnCancel(std::function<void()> hook) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (!flag_.is_set()) {
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
    return !cv_.wait_for(lock, duration, [&] { return flag_.is_set(); });
  }

 private:
  mutable std::mutex mu_;
  mutable std::condition_variable cv_;
  CancelFlag flag_;  // set under mu_, so SleepFor cannot miss it
  std::vector<std::function<void()>> hooks_;
};

}  // namespace abx
