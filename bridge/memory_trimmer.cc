#include "bridge/memory_trimmer.h"

#include <malloc.h>

namespace abx::bridge {

MemoryTrimmer::MemoryTrimmer(std::chrono::milliseconds period)
    : period_(period), thread_([this] { Loop(); }) {}

MemoryTrimmer::~MemoryTrimmer() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  thread_.join();
}

void MemoryTrimmer::Loop() {
  std::unique_lock<std::mutex> lock(mu_);
  while (!cv_.wait_for(lock, period_, [this] { return stop_; })) {
    lock.unlock();
    malloc_trim(0);
    lock.lock();
  }
}

}  // namespace abx::bridge
