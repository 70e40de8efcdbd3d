#include "bridge/core/run_queue.h"

#include <algorithm>
#include <chrono>

#include "bridge/base/time_util.h"

namespace abx::core {

Status RunQueue::Enter(int64_t deadline_ms, CancelToken* cancel) {
  ABX_ASSIGN_OR_RETURN(uint64_t ticket, Reserve());
  return EnterReserved(ticket, deadline_ms, cancel);
}

Result<uint64_t> RunQueue::Reserve() {
  std::lock_guard<std::mutex> lock(mu_);
  if (poison_) return *poison_;
  if (waiting_.size() >= kMaxWaiting) {
    Error full = MakeError(ErrorCode::kInvalidState,
                           std::string("this ") + holder_ + " already has 64 runs waiting; try again later");
    full.retryable = true;
    return full;
  }
  const uint64_t ticket = next_ticket_++;
  waiting_.push_back(ticket);
  return ticket;
}

void RunQueue::Abandon(uint64_t ticket) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = std::find(waiting_.begin(), waiting_.end(), ticket);
  if (it == waiting_.end()) return;
  waiting_.erase(it);
  turn_.notify_all();
}

Status RunQueue::EnterReserved(uint64_t ticket, int64_t deadline_ms, CancelToken* cancel) {
  // A cancel wakes every waiter of this queue; each then looks at its own token.
  // Registered before mu_ is taken: on a token already cancelled the hook runs at once.
  std::weak_ptr<RunQueue> self = weak_from_this();
  cancel->OnCancel([self] {
    if (auto queue = self.lock()) {
      std::lock_guard<std::mutex> wake(queue->mu_);
      queue->turn_.notify_all();
    }
  });
  std::unique_lock<std::mutex> lock(mu_);
  if (std::find(waiting_.begin(), waiting_.end(), ticket) == waiting_.end()) {
    return MakeError(ErrorCode::kNotInitialized, std::string(run_) + " lost its place in line");
  }
  auto leave_line = [&] {
    auto it = std::find(waiting_.begin(), waiting_.end(), ticket);
    if (it != waiting_.end()) waiting_.erase(it);
    turn_.notify_all();
  };
  for (;;) {
    if (poison_) {
      leave_line();
      return *poison_;
    }
    if (cancel->cancelled()) {
      leave_line();
      return MakeError(ErrorCode::kCancelled, std::string(run_) + " was cancelled while it waited for its turn");
    }
    const int64_t left = deadline_ms > 0 ? deadline_ms - NowMillis() : 1;
    if (left <= 0) {
      leave_line();
      return MakeError(ErrorCode::kTimeout,
                       std::string(run_) + " timed out before its turn came (its timeout counts from arrival)");
    }
    if (!running_ && !waiting_.empty() && waiting_.front() == ticket) break;
    if (deadline_ms > 0) {
      turn_.wait_for(lock, std::chrono::milliseconds(left));
    } else {
      turn_.wait(lock);
    }
  }
  waiting_.pop_front();
  running_ = true;
  return OkStatus();
}

void RunQueue::Leave() {
  std::lock_guard<std::mutex> lock(mu_);
  running_ = false;
  turn_.notify_all();
}

void RunQueue::Poison(Error why) {
  std::lock_guard<std::mutex> lock(mu_);
  poison_ = std::move(why);
  turn_.notify_all();
}

Result<std::shared_ptr<RunPlace>> RunPlace::Take(std::shared_ptr<RunQueue> queue) {
  ABX_ASSIGN_OR_RETURN(uint64_t ticket, queue->Reserve());
  return std::shared_ptr<RunPlace>(new RunPlace(std::move(queue), ticket));
}

RunPlace::~RunPlace() {
  if (!entered_) queue_->Abandon(ticket_);
}

Status RunPlace::Enter(int64_t deadline_ms, CancelToken* cancel) {
  entered_ = true;  // entered or refused: either way the place is gone from the line
  return queue_->EnterReserved(ticket_, deadline_ms, cancel);
}

Result<std::shared_ptr<RunPlace>> PlaceIn(const std::shared_ptr<RunQueue>& queue,
                                          std::shared_ptr<RunPlace> reserved) {
  if (reserved && reserved->queue() == queue) return reserved;
  return RunPlace::Take(queue);
}

}  // namespace abx::core
