#pragma once
// A cancellation flag that wakes whoever waits on it.
//
// Set once, from any thread ($/cancel, the host going away, the bridge draining). A
// blocked caller registers a Watch for as long as it waits; Set() runs every live watch's
// wake-up on the setting thread, so the waiter learns of the cancel at once instead of
// looking at the flag every few milliseconds. Polling cost a futex wake-up per waiting
// request every 20 ms under load, and up to 20 ms of abort latency.
//
// Wake-ups run under the flag's lock, which is what lets a Watch be destroyed safely at
// any moment: once ~Watch returns, its wake-up never runs again. So a wake-up must be
// short and must not block, take a lock its owner may hold while destroying the Watch,
// or touch this flag.

#include <atomic>
#include <functional>
#include <mutex>
#include <utility>
#include <vector>

namespace abx {

class CancelFlag {
 public:
  CancelFlag() = default;
  CancelFlag(const CancelFlag&) = delete;
  CancelFlag& operator=(const CancelFlag&) = delete;

  // Sets the flag and runs the live watches' wake-ups. False if it was already set.
  bool Set() {
    std::lock_guard<std::mutex> lock(mu_);
    if (set_.exchange(true, std::memory_order_acq_rel)) return false;
    for (Watch* watch : watches_) watch->wake_();
    return true;
  }

  bool is_set() const { return set_.load(std::memory_order_acquire); }

  // Runs `wake` when the flag is set while the Watch lives, or at once (in the
  // constructor) if it is set already. A null flag is never set.
  class Watch {
   public:
    Watch(const CancelFlag* flag, std::function<void()> wake)
        : flag_(flag), wake_(std::move(wake)) {
      if (flag_ == nullptr) return;
      std::lock_guard<std::mutex> lock(flag_->mu_);
      if (flag_->set_.load(std::memory_order_acquire)) {
        wake_();
      } else {
        flag_->watches_.push_back(this);
      }
    }
    ~Watch() {
      if (flag_ == nullptr) return;
      std::lock_guard<std::mutex> lock(flag_->mu_);
      auto& watches = flag_->watches_;
      for (size_t i = 0; i < watches.size(); ++i) {
        if (watches[i] == this) {
          watches[i] = watches.back();
          watches.pop_back();
          break;
        }
      }
    }
    Watch(const Watch&) = delete;
    Watch& operator=(const Watch&) = delete;

   private:
    friend class CancelFlag;
    const CancelFlag* flag_;
    std::function<void()> wake_;
  };

 private:
  mutable std::mutex mu_;
  std::atomic<bool> set_{false};
  mutable std::vector<Watch*> watches_;  // under mu_; usually one: the request's wait
};

}  // namespace abx
