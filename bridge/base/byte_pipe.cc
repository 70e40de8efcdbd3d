#include "bridge/base/byte_pipe.h"

#include <algorithm>
#include <cstring>
#include <utility>

namespace abx {

bool BytePipe::Push(std::string bytes) {
  std::function<void()> resume;
  bool room;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (aborted_ || ended_) return true;  // nobody reads them: taken and dropped
    queued_ += bytes.size();
    pushed_ += bytes.size();
    if (!bytes.empty()) chunks_.push_back(std::move(bytes));
    room = queued_ < kCapacity;
    producer_waits_ = !room;
    if (reader_waits_) {
      reader_waits_ = false;
      resume = resume_;
    }
  }
  if (resume) resume();
  return room;
}

void BytePipe::End() {
  std::function<void()> resume;
  {
    std::lock_guard<std::mutex> lock(mu_);
    ended_ = true;
    if (reader_waits_) {
      reader_waits_ = false;
      resume = resume_;
    }
  }
  if (resume) resume();
}

void BytePipe::Abort() {
  std::function<void()> resume;
  {
    std::lock_guard<std::mutex> lock(mu_);
    aborted_ = true;
    chunks_.clear();
    queued_ = 0;
    if (reader_waits_) {
      reader_waits_ = false;
      resume = resume_;
    }
  }
  if (resume) resume();
}

void BytePipe::SetOnRoom(std::function<void()> on_room) {
  std::lock_guard<std::mutex> lock(mu_);
  on_room_ = std::move(on_room);
}

size_t BytePipe::pushed() const {
  std::lock_guard<std::mutex> lock(mu_);
  return pushed_;
}

size_t BytePipe::Read(char* out, size_t size) {
  std::function<void()> on_room;
  size_t copied = 0;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (aborted_) return kAbort;
    while (copied < size && !chunks_.empty()) {
      const std::string& front = chunks_.front();
      const size_t take = std::min(size - copied, front.size() - front_used_);
      std::memcpy(out + copied, front.data() + front_used_, take);
      copied += take;
      front_used_ += take;
      if (front_used_ == front.size()) {
        chunks_.pop_front();
        front_used_ = 0;
      }
    }
    queued_ -= copied;
    if (copied == 0) {
      if (ended_) return 0;
      reader_waits_ = true;
      return kWait;
    }
    if (producer_waits_ && queued_ < kCapacity / 2) {
      producer_waits_ = false;
      on_room = on_room_;
    }
  }
  if (on_room) on_room();
  return copied;
}

void BytePipe::SetResume(std::function<void()> resume) {
  std::lock_guard<std::mutex> lock(mu_);
  resume_ = std::move(resume);
}

}  // namespace abx
