#pragma once
// The runs of one code context or one shell, one at a time in arrival order
// (docs/epp1.md §3, code.interpret and exec.shell): execd refuses a second run on a busy
// context, and would run two commands of a shell at once and let the last decide the
// shell's state, so the bridge queues them, across every session that reaches the
// context or shell. Waiting is bounded by the run's own deadline and its cancellation;
// nothing polls.

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include "bridge/base/cancel.h"
#include "bridge/base/error.h"

namespace abx::core {

class RunQueue : public std::enable_shared_from_this<RunQueue> {
 public:
  static constexpr size_t kMaxWaiting = 64;

  // For the errors: `holder` is what the runs belong to ("code context", "shell"),
  // `run` the method that waits ("code.run", "the shell command").
  RunQueue(const char* holder, const char* run) : holder_(holder), run_(run) {}

  // Waits for this run's turn. E8007 (retryable) when kMaxWaiting already wait, E8006
  // once `deadline_ms` (NowMillis; 0 = none) passes, E8009 on cancel, and the poison
  // error when the context's kernel stopped answering interrupts.
  Status Enter(int64_t deadline_ms, CancelToken* cancel);
  // The same in two steps: a place in line taken at once (as a request arrives, on the
  // session's reader: RunPlace), the wait for it later, on any thread. A place taken
  // and never entered must be given up (Abandon), or the runs behind it wait for it.
  Result<uint64_t> Reserve();
  Status EnterReserved(uint64_t ticket, int64_t deadline_ms, CancelToken* cancel);
  void Abandon(uint64_t ticket);
  // The run that entered is over; the next may start.
  void Leave();
  // The running run's kernel ignores interrupts (code contexts only): it and every run that waits or comes
  // later fail with `why`, until the context is deleted.
  void Poison(Error why);
  // What a run of this queue may have left running upstream: its stream broke off after
  // upstream took it (a code context: execd keeps the context busy until its kernel ends
  // that run, whoever reads it), so the next run's "busy" is the bridge's own leftover,
  // not another client's. Read and written only by the run that holds the turn; the
  // turn's hand-over orders those accesses.
  struct Leftover {
    std::string context_id;            // upstream's id of what is held; "" = nothing
    int64_t interrupted_since_ms = 0;  // when its first interrupt went out; 0 = none yet
  };
  Leftover& leftover() { return leftover_; }

 private:
  const char* const holder_;
  const char* const run_;
  std::mutex mu_;
  std::condition_variable turn_;
  std::deque<uint64_t> waiting_;  // tickets, oldest first
  uint64_t next_ticket_ = 0;
  bool running_ = false;
  std::optional<Error> poison_;
  Leftover leftover_;
};

// A place in a RunQueue taken when its request arrived, kept until the run enters; a place
// dropped without entering is given up, so the runs behind it do not wait for it.
class RunPlace {
 public:
  // A place at the end of `queue`'s line now: E8007 when the line is full (RunQueue).
  static Result<std::shared_ptr<RunPlace>> Take(std::shared_ptr<RunQueue> queue);
  ~RunPlace();
  RunPlace(const RunPlace&) = delete;
  RunPlace& operator=(const RunPlace&) = delete;

  const std::shared_ptr<RunQueue>& queue() const { return queue_; }
  // Waits for this place's turn (RunQueue::EnterReserved); once.
  Status Enter(int64_t deadline_ms, CancelToken* cancel);

 private:
  RunPlace(std::shared_ptr<RunQueue> queue, uint64_t ticket) : queue_(std::move(queue)), ticket_(ticket) {}
  std::shared_ptr<RunQueue> queue_;
  uint64_t ticket_;
  bool entered_ = false;
};

// `reserved` when it is a place in `queue`, else a place taken now.
Result<std::shared_ptr<RunPlace>> PlaceIn(const std::shared_ptr<RunQueue>& queue,
                                          std::shared_ptr<RunPlace> reserved);

}  // namespace abx::core
