#include "tests/fake-opensandbox/sandbox_gate.h"

namespace fake_opensandbox {

void SandboxGate::Set(State state) {
  std::lock_guard<std::mutex> lock(mutex_);
  state_ = state;
  cv_.notify_all();
}

SandboxGate::State SandboxGate::Get() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return state_;
}

SandboxGate::State SandboxGate::WaitWhileFrozen() const {
  std::unique_lock<std::mutex> lock(mutex_);
  cv_.wait(lock, [this] { return state_ != State::kFrozen; });
  return state_;
}

}  // namespace fake_opensandbox
