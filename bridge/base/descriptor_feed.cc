#include "bridge/base/descriptor_feed.h"

#include <errno.h>
#include <string.h>
#include <unistd.h>

#include <string>
#include <utility>

#include "bridge/base/local_error.h"

namespace abx {
namespace {

// One read: large enough that the thread wakes rarely, a quarter of the pipe.
constexpr size_t kReadBytes = 256 << 10;


}  // namespace

DescriptorFeed::DescriptorFeed(int fd, int64_t size, std::function<void(int64_t)> progress)
    : fd_(fd), size_(size), progress_(std::move(progress)) {
  pipe_->SetOnRoom([this] {
    std::lock_guard<std::mutex> lock(mu_);
    room_ = true;
    cv_.notify_all();
  });
}

DescriptorFeed::~DescriptorFeed() {
  Finish();
  pipe_->SetOnRoom(nullptr);
  close(fd_);
}

void DescriptorFeed::Start() { thread_ = std::thread([this] { Run(); }); }

Status DescriptorFeed::Finish() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
    cv_.notify_all();
  }
  if (thread_.joinable()) thread_.join();
  return status_;
}

void DescriptorFeed::Run() {
  int64_t offset = 0;
  while (offset < size_) {
    {
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait(lock, [this] { return room_ || stopping_; });
      if (stopping_) return;
    }
    std::string chunk(static_cast<size_t>(std::min<int64_t>(kReadBytes, size_ - offset)), '\0');
    const ssize_t got = pread(fd_, chunk.data(), chunk.size(), offset);
    if (got < 0 && errno == EINTR) continue;
    if (got < 0) {
      status_ = LocalFileError(errno, "reading the local file failed");
      pipe_->Abort();
      return;
    }
    if (got == 0) {
      Error e = MakeError(ErrorCode::kInvalidState, "the local file shrank to " + std::to_string(offset) +
                                                        " bytes of the " + std::to_string(size_) +
                                                        " it had when opened");
      e.field = "local_path";
      status_ = e;
      pipe_->Abort();
      return;
    }
    chunk.resize(static_cast<size_t>(got));
    offset += got;
    {
      // Cleared before the push: an on_room between the push and here is not lost.
      std::lock_guard<std::mutex> lock(mu_);
      room_ = false;
    }
    if (pipe_->Push(std::move(chunk))) {
      std::lock_guard<std::mutex> lock(mu_);
      room_ = true;
    }
    if (progress_) progress_(offset);
  }
  pipe_->End();
}

}  // namespace abx
