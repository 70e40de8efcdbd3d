#pragma once
// A blocking Read or Write over a gRPC callback reactor, for code that runs on a thread of
// its own (a typed call's body, an EPP session's loop) and wants the stream the way the
// sync API gave it: the caller starts the operation, and waits until gRPC reports it done
// in the reactor's OnReadDone / OnWriteDone.
//
// Why not react in the callbacks themselves: the work behind a message blocks (an EPP
// line may wait for a request thread's upload, a command's output waits for a slow
// host), and gRPC's callback threads must not block. Waiting for one operation before
// starting the next is also the backpressure the sync API had: a host that stops reading
// stops the writer, and the bridge buffers one message per stream, not more.
//
// One operation of a kind at a time, as gRPC requires: concurrent callers queue on a
// mutex, in the order the mutex admits them. Once an operation fails (the client went
// away, the call was cancelled, the other side half-closed), every later one fails at
// once without reaching gRPC.

#include <condition_variable>
#include <mutex>

namespace abx::api {

class BlockingOp {
 public:
  // Runs `start` (which starts exactly one gRPC operation) and waits for Done. False
  // when this operation or an earlier one failed.
  template <typename Start>
  bool Run(Start&& start) {
    std::lock_guard<std::mutex> one_at_a_time(serial_mu_);
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (failed_) return false;
      pending_ = true;
    }
    // Started without mu_: gRPC may report completion before `start` returns.
    start();
    std::unique_lock<std::mutex> lock(mu_);
    done_.wait(lock, [this] { return !pending_; });
    return !failed_;
  }

  // From the reactor's OnReadDone / OnWriteDone.
  void Done(bool ok) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      pending_ = false;
      if (!ok) failed_ = true;
    }
    done_.notify_all();
  }

 private:
  std::mutex serial_mu_;  // held across a whole operation
  std::mutex mu_;
  std::condition_variable done_;
  bool pending_ = false;
  bool failed_ = false;
};

}  // namespace abx::api
