#pragma once
// The runs of one code context, one at a time in arrival order (docs/epp1.md §3,
// code.interpret): execd refuses a second run on a busy context, so the bridge queues
// them, across every session that reaches the context. Waiting is bounded by the run's
// own deadline and its cancellation; nothing polls.

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>

#include "bridge/base/cancel.h"
#include "bridge/base/error.h"

namespace abx::core {

class CodeQueue : public std::enable_shared_from_this<CodeQueue> {
 public:
  static constexpr size_t kMaxWaiting = 64;

  // Waits for this run's turn. E8007 (retryable) when kMaxWaiting already wait, E8006
  // once `deadline_ms` (NowMillis; 0 = none) passes, E8009 on cancel, and the poison
  // error when the context's kernel stopped answering interrupts.
  Status Enter(int64_t deadline_ms, CancelToken* cancel);
  // The run that entered is over; the next may start.
  void Leave();
  // The running run's kernel ignores interrupts: it and every run that waits or comes
  // later fail with `why`, until the context is deleted.
  void Poison(Error why);

 private:
  std::mutex mu_;
  std::condition_variable turn_;
  std::deque<uint64_t> waiting_;  // tickets, oldest first
  uint64_t next_ticket_ = 0;
  bool running_ = false;
  std::optional<Error> poison_;
};

}  // namespace abx::core
