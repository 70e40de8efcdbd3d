#pragma once
// The threads that run EPP requests, shared by every session of the bridge.
//
// Why reuse threads: each request used to get a std::thread of its own. Under 64 busy
// sessions, creating and ending those threads (clone, a fresh stack's page faults, TLS,
// the allocator's per-thread state, unmapping) was 12 % of the bridge's samples, and
// under glibc's malloc every new thread was handed one of its per-thread arenas, whose
// free memory then fragmented.
//
// Why it grows without bound instead of being a fixed pool: a request may block for
// minutes (exec.run of a long command, sandbox.create waiting for Running, a stream its
// host reads slowly), and the network side never needs a request thread (one I/O thread
// drives every transfer, bridge/http/http_client.h). With N fixed threads, N sessions with
// long requests would hold all of them and every other session — 64 agents share one
// bridge — would wait, even for provider.info or the $/cancel-able requests queued behind
// them. So a request always starts at once: on an idle thread if there is one, else on a
// new one; how many run is what the hosts ask for, as before.
//
// What it keeps: at most `max_idle` idle threads (a thread finding that many idle exits
// instead), and an idle thread exits after `idle_timeout` without work, so after a burst
// the bridge shrinks back; ReleaseIdle() ends the idle ones at once (the last session
// has gone). Under steady load threads are handed from one request to the next without
// being created at all.
//
// Cancellation is not the pool's business: each request carries its own CancelToken
// (session.h), and a thread is only handed back when its task returns.

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>

#include "bridge/base/task_runner.h"

namespace abx::daemon {

struct RequestPoolOptions {
  // Idle threads kept for the next requests; more exit as soon as they are idle.
  size_t max_idle = 16;
  // An idle thread exits after this long without work.
  std::chrono::milliseconds idle_timeout{10000};
};

class RequestPool final : public TaskRunner {
 public:
  explicit RequestPool(RequestPoolOptions options = {});
  // Idle threads exit; running tasks finish on their own (they own nothing of the pool's
  // but its shared state, which they keep alive). Does not wait.
  ~RequestPool();
  RequestPool(const RequestPool&) = delete;
  RequestPool& operator=(const RequestPool&) = delete;

  // Runs `task` on an idle thread, or on a new one when none is idle. Never queues.
  void Run(std::function<void()> task) override;

  // Every thread idle now exits (threads still running tasks stay until they finish and
  // idle out): for the moment the last session ends, so an idle bridge holds no request
  // threads, their stacks and their malloc caches. Returns once no thread is idle any
  // more, or after `wait` at most.
  void ReleaseIdle(std::chrono::milliseconds wait = std::chrono::milliseconds(200));

  struct Stats {
    size_t threads = 0;           // alive: running a task or idle
    size_t idle = 0;              // waiting for a task
    uint64_t threads_started = 0;  // since the pool was made
  };
  Stats stats() const;

 private:
  struct State;
  static void Work(std::shared_ptr<State> state, std::function<void()> task);

  std::shared_ptr<State> state_;
};

}  // namespace abx::daemon
