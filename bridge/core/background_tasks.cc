#include "bridge/core/background_tasks.h"

#include <thread>
#include <utility>

namespace abx::core {

BackgroundTasks::BackgroundTasks(size_t max_threads)
    : max_threads_(max_threads == 0 ? 1 : max_threads) {}

BackgroundTasks::~BackgroundTasks() {
  std::unique_lock<std::mutex> lock(mu_);
  all_done_.wait(lock, [this] { return threads_ == 0 && queue_.empty(); });
}

void BackgroundTasks::Run(std::function<void()> task) {
  std::lock_guard<std::mutex> lock(mu_);
  queue_.push_back(std::move(task));
  if (threads_ < max_threads_) {
    ++threads_;
    // Detached: the destructor waits for the count instead of joining, since the last
    // thread notifies it under the lock and touches nothing of this object after that.
    std::thread([this] { Work(); }).detach();
  }
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

BackgroundTasks::Stats BackgroundTasks::stats() const {
  std::lock_guard<std::mutex> lock(mu_);
  return Stats{threads_, queue_.size()};
}

}  // namespace abx::core
