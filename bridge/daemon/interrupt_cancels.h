#pragma once
// ^C cancels the call a bridge command has in flight (snapshot, template build, watch).
// The signals are blocked when this is made, which must come before gRPC starts its
// threads (they would take the signal otherwise); one thread of ours then waits for them
// while the call runs, and cancels it.

#include <atomic>
#include <csignal>
#include <initializer_list>
#include <thread>

#include <grpcpp/grpcpp.h>

namespace abx::daemon {

class InterruptCancels {
 public:
  // `signals`: SIGINT, and SIGTERM too for a command that runs until it is stopped.
  explicit InterruptCancels(std::initializer_list<int> signals = {SIGINT});
  ~InterruptCancels();  // Done
  InterruptCancels(const InterruptCancels&) = delete;
  InterruptCancels& operator=(const InterruptCancels&) = delete;

  // From now on a signal cancels `context`'s call, after printing `note` (when not null)
  // to stderr.
  void Watch(grpc::ClientContext* context, const char* note = nullptr);
  // The call is over: a signal from now on cancels nothing, and the thread is gone.
  void Done();
  // Whether a signal cancelled the call.
  bool interrupted() const { return interrupted_; }

 private:
  sigset_t signals_;
  int wake_signal_;  // one of them, sent by Done to end the wait
  std::atomic<bool> done_{false};
  std::atomic<bool> interrupted_{false};
  std::thread waiter_;
};

}  // namespace abx::daemon
