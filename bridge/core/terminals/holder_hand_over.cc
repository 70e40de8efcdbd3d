#include "bridge/core/terminals/holder_hand_over.h"

#include <algorithm>

namespace abx::core {

std::optional<uint64_t> HolderHandOver::owed_from() const {
  if (!holder_) return std::nullopt;
  return next_;
}

uint64_t HolderHandOver::Lag(uint64_t end) const { return holder_ ? end - std::min(end, next_) : 0; }

std::shared_ptr<TerminalHolder> HolderHandOver::Take(std::shared_ptr<TerminalHolder> holder, uint64_t offset) {
  std::shared_ptr<TerminalHolder> earlier;
  if (holder_ && holder_ != holder) {
    earlier = holder_;
    notices_.push_back({holder_, next_, "taken_over"});
  }
  holder_ = std::move(holder);
  next_ = offset;
  exit_delivered_ = false;
  paused_ = true;
  return earlier;
}

void HolderHandOver::GiveUp(const std::string& reason) {
  if (!holder_) return;
  notices_.push_back({holder_, next_, reason});
  holder_.reset();
}

void HolderHandOver::DropNoticesFor(const TerminalHolder* holder) {
  notices_.erase(std::remove_if(notices_.begin(), notices_.end(),
                                [&](const Notice& notice) { return notice.holder.get() == holder; }),
                 notices_.end());
}

void HolderHandOver::Release(const TerminalHolder* holder) {
  if (Holds(holder)) holder_.reset();
}

void HolderHandOver::ReleaseAll() {
  notices_.clear();
  holder_.reset();
}

HolderHandOver::Notice HolderHandOver::PopNotice() {
  Notice notice = std::move(notices_.front());
  notices_.pop_front();
  return notice;
}

bool HolderHandOver::NoticeWaitingFor(const TerminalHolder* holder) const {
  if (calling_ == holder) return true;
  return std::any_of(notices_.begin(), notices_.end(),
                     [&](const Notice& notice) { return notice.holder.get() == holder; });
}

}  // namespace abx::core
