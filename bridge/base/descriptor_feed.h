#pragma once
// The body of an upload read from an open local file (files.upload: the descriptor the
// shim handed over). A thread of its own reads the file into a BytePipe, so the HTTP
// client's I/O thread, which must not block, never waits on a disk.
//
// Exactly `size` bytes are sent, the size the file had when it was opened: a file that
// grew meanwhile is cut there, and one that shrank or cannot be read cuts the body short
// (the server then writes nothing) and is reported by Finish.

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>

#include "bridge/base/byte_pipe.h"
#include "bridge/base/error.h"

namespace abx {

class DescriptorFeed {
 public:
  // Takes ownership of `fd`. `progress(bytes)` runs on the feed's thread after each read.
  DescriptorFeed(int fd, int64_t size, std::function<void(int64_t bytes)> progress);
  ~DescriptorFeed();  // stops the thread, closes the descriptor

  std::shared_ptr<BytePipe> body() const { return pipe_; }
  // Starts reading.
  void Start();
  // Stops reading (the upload is over, whichever way) and reports what reading saw: an
  // error when the file could not be read or ended before `size` bytes.
  Status Finish();

 private:
  void Run();

  const int fd_;
  const int64_t size_;
  const std::function<void(int64_t)> progress_;
  const std::shared_ptr<BytePipe> pipe_ = std::make_shared<BytePipe>();
  std::mutex mu_;
  std::condition_variable cv_;
  bool room_ = true;       // under mu_
  bool stopping_ = false;  // under mu_
  Status status_ = OkStatus();  // written by the thread, read after join
  std::thread thread_;
};

}  // namespace abx
