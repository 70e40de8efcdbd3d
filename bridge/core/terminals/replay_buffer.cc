#include "bridge/core/terminals/replay_buffer.h"

#include <algorithm>

namespace abx::core {

void ReplayBuffer::StartAt(uint64_t offset) {
  kept_.clear();
  kept_from_ = end_ = offset;
}

void ReplayBuffer::Append(const std::string& data, std::optional<uint64_t> owed_from) {
  kept_ += data;
  end_ += data.size();
  const uint64_t window_from = end_ > window_ ? end_ - window_ : 0;
  const uint64_t owed = owed_from ? std::min(*owed_from, end_) : end_;
  const uint64_t keep_from = std::max(kept_from_, std::min(window_from, owed));
  if (keep_from - kept_from_ > (window_ >> 2)) {  // erased in batches
    kept_.erase(0, static_cast<size_t>(keep_from - kept_from_));
    kept_from_ = keep_from;
  }
}

bool ReplayBuffer::AppendReplay(uint64_t offset, const std::string& data, std::optional<uint64_t> owed_from) {
  if (offset > end_) StartAt(offset);
  if (offset + data.size() <= end_) return false;
  Append(data.substr(static_cast<size_t>(end_ - offset)), owed_from);
  return true;
}

std::string ReplayBuffer::Read(uint64_t offset, size_t max) const {
  if (offset < kept_from_ || offset >= end_) return "";
  return kept_.substr(static_cast<size_t>(offset - kept_from_), max);
}

}  // namespace abx::core
