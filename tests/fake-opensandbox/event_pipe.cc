#include "tests/fake-opensandbox/event_pipe.h"

namespace fake_opensandbox {

void EventPipe::Append(std::string& bytes) {
  if (bytes.empty()) return;
  std::lock_guard<std::mutex> lock(mutex_);
  if (detached_) {
    bytes.clear();
    return;
  }
  if (pending_.empty()) {
    pending_.swap(bytes);
  } else {
    pending_.append(bytes);
  }
  bytes.clear();
  cv_.notify_all();
}

bool EventPipe::WaitForRoom(SteadyTime until) {
  std::unique_lock<std::mutex> lock(mutex_);
  return cv_.wait_until(lock, until,
                        [this] { return detached_ || pending_.size() <= high_water_; });
}

void EventPipe::Close() {
  std::lock_guard<std::mutex> lock(mutex_);
  closed_ = true;
  cv_.notify_all();
}

EventPipe::ReadResult EventPipe::Read(std::string* out, SteadyTime until) {
  std::unique_lock<std::mutex> lock(mutex_);
  cv_.wait_until(lock, until, [this] { return !pending_.empty() || closed_; });
  if (!pending_.empty()) {
    out->clear();
    out->swap(pending_);
    cv_.notify_all();  // room for the producer
    return ReadResult::kData;
  }
  return closed_ ? ReadResult::kClosed : ReadResult::kTimeout;
}

void EventPipe::Detach() {
  std::lock_guard<std::mutex> lock(mutex_);
  detached_ = true;
  pending_.clear();
  pending_.shrink_to_fit();
  cv_.notify_all();
}

}  // namespace fake_opensandbox
