#include "bridge/core/terminals/pending_frames.h"

namespace abx::core {

bool PendingFrames::Push(bool text, std::string& payload) {
  if (bytes_ + payload.size() > limit_) return false;
  bytes_ += payload.size();
  frames_.emplace_back(text, std::move(payload));
  return true;
}

void PendingFrames::GiveBack(const std::vector<Frame>& unsent) {
  for (auto it = unsent.rbegin(); it != unsent.rend(); ++it) {
    bytes_ += it->second.size();
    frames_.push_front(*it);
  }
}

std::deque<PendingFrames::Frame> PendingFrames::TakeAll() {
  std::deque<Frame> out;
  out.swap(frames_);
  bytes_ = 0;
  return out;
}

void PendingFrames::Clear() {
  frames_.clear();
  bytes_ = 0;
}

}  // namespace abx::core
