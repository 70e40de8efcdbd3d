#include "tests/fake-opensandbox/counting_task_queue.h"

#include <thread>

namespace fake_opensandbox {

CountingTaskQueue::CountingTaskQueue(std::shared_ptr<void> owner, std::atomic<uint64_t>* accepted)
    : owner_(std::move(owner)), accepted_(accepted) {}

void CountingTaskQueue::enqueue(std::function<void()> fn) {
  accepted_->fetch_add(1);
  {
    std::lock_guard<std::mutex> lock(live_->mutex);
    ++live_->running;
  }
  std::thread([live = live_, fn = std::move(fn)] {
    fn();
    std::lock_guard<std::mutex> lock(live->mutex);
    --live->running;
    live->cv.notify_all();
  }).detach();
}

void CountingTaskQueue::shutdown() {
  std::unique_lock<std::mutex> lock(live_->mutex);
  live_->cv.wait(lock, [this] { return live_->running == 0; });
}

}  // namespace fake_opensandbox
