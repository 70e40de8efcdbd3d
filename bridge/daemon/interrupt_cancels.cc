#include "bridge/daemon/interrupt_cancels.h"

#include <pthread.h>

#include <cstdio>

namespace abx::daemon {

InterruptCancels::InterruptCancels(std::initializer_list<int> signals) : wake_signal_(*signals.begin()) {
  sigemptyset(&signals_);
  for (int signal_number : signals) sigaddset(&signals_, signal_number);
  pthread_sigmask(SIG_BLOCK, &signals_, nullptr);
}

InterruptCancels::~InterruptCancels() { Done(); }

void InterruptCancels::Watch(grpc::ClientContext* context, const char* note) {
  waiter_ = std::thread([this, context, note] {
    int signal_number = 0;
    sigwait(&signals_, &signal_number);
    if (done_) return;  // Done's own wake-up
    interrupted_ = true;
    if (note != nullptr) std::fprintf(stderr, "%s", note);
    context->TryCancel();
  });
}

void InterruptCancels::Done() {
  done_ = true;
  if (!waiter_.joinable()) return;
  // Sent to the waiter alone, which takes it as any other: it finds done_ set.
  pthread_kill(waiter_.native_handle(), wake_signal_);
  waiter_.join();
}

}  // namespace abx::daemon
