#pragma once
// Frames for execd that wait for a terminal's connection: input, resizes and signals sent
// while it is being restored, and the frames a dropped connection never began to write.
// They go first, in order, once a connection is up. What is sent while waiting is
// bounded (a holder typing into a terminal whose execd is gone); what a dropped
// connection gives back always fits, having been accepted once.
//
// Not locked: the terminal's lock guards it (terminal.h).

#include <cstddef>
#include <deque>
#include <string>
#include <utility>
#include <vector>

namespace abx::core {

class PendingFrames {
 public:
  using Frame = std::pair<bool, std::string>;  // text?, payload

  explicit PendingFrames(size_t limit_bytes) : limit_(limit_bytes) {}

  // Queues a frame last, moving `payload` in; false, queuing nothing and leaving
  // `payload` as it was, when that would pass the limit.
  bool Push(bool text, std::string& payload);
  // Frames a dropped connection did not write, ahead of everything queued, in their order.
  void GiveBack(const std::vector<Frame>& unsent);
  // Every frame, in order, leaving none.
  std::deque<Frame> TakeAll();
  void Clear();
  size_t bytes() const { return bytes_; }
  bool empty() const { return frames_.empty(); }

 private:
  const size_t limit_;
  std::deque<Frame> frames_;
  size_t bytes_ = 0;
};

}  // namespace abx::core
