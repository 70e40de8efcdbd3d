#include "bridge/core/background_tasks.h"

#include <thread>
#include <utility>

namespace abx::core {

BackgroundTasks::BackgroundTasks(size_t max_threads)
    : max_threads_(max_threads == 0 ? 1 : max_threads) {}

BackgroundTasks::~BackgroundTasks() {
  std::unique_lock<std::mutex> lock(mu_);
  stopping_ = true;  // the timer thread hands over what waits, due or not
  timers_changed_.notify_all();
  all_done_.wait(lock, [this] {
    return threads_ == 0 && queue_.empty() && timers_.empty() && !keeping_time_;
  });
}

void BackgroundTasks::Run(std::function<void()> task) {
  std::lock_guard<std::mutex> lock(mu_);
  queue_.push_back(std::move(task));
  StartWorkerLocked();
}

void BackgroundTasks::RunAt(Clock::time_point when, std::function<void()> task) {
  std::lock_guard<std::mutex> lock(mu_);
  timers_.emplace(when, std::move(task));
  if (keeping_time_) {
    timers_changed_.notify_all();
    return;
  }
  keeping_time_ = true;
  std::thread([this] { KeepTime(); }).detach();
}

void BackgroundTasks::StartWorkerLocked() {
  if (threads_ >= max_threads_) return;  // a running thread takes it next
  ++threads_;
  // Detached: the destructor waits for the count instead of joining, since the last
  // thread notifies it under the lock and touches nothing of this object after that.
  std::thread([this] { Work(); }).detach();
}

void BackgroundTasks::Work() {
  std::unique_lock<std::mutex> lock(mu_);
  while (!queue_.empty()) {
    std::function<void()> task = std::move(queue_.front());
    queue_.pop_front();
    lock.unlock();
    task();
    task = nullptr;  // what it holds goes before the destructor may run
    lock.lock();
  }
  --threads_;
  // Notified under the lock: the destructor may run as soon as it sees no thread left.
  all_done_.notify_all();
}

void BackgroundTasks::KeepTime() {
  std::unique_lock<std::mutex> lock(mu_);
  while (!timers_.empty()) {
    auto first = timers_.begin();
    if (stopping_ || first->first <= Clock::now()) {
      queue_.push_back(std::move(first->second));
      timers_.erase(first);
      StartWorkerLocked();
      continue;
    }
    timers_changed_.wait_until(lock, first->first);
  }
  keeping_time_ = false;
  all_done_.notify_all();
}

bool BackgroundTasks::stopping() const {
  std::lock_guard<std::mutex> lock(mu_);
  return stopping_;
}

BackgroundTasks::Stats BackgroundTasks::stats() const {
  std::lock_guard<std::mutex> lock(mu_);
  return Stats{threads_, queue_.size(), timers_.size()};
}

}  // namespace abx::core
