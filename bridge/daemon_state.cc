#include "bridge/daemon_state.h"

namespace abx::bridge {

DaemonState::DaemonState(std::unique_ptr<core::BridgeCore> core)
    : core_(std::move(core)),
      started_(std::chrono::steady_clock::now()),
      last_activity_(started_) {}

std::unique_ptr<DaemonState::SessionLease> DaemonState::BeginSession() {
  std::lock_guard<std::mutex> lock(mu_);
  if (draining_) return nullptr;
  ++sessions_active_;
  ++sessions_total_;
  last_activity_ = std::chrono::steady_clock::now();
  return std::make_unique<SessionLease>(this);
}

DaemonState::SessionLease::~SessionLease() {
  std::lock_guard<std::mutex> lock(state_->mu_);
  --state_->sessions_active_;
  state_->last_activity_ = std::chrono::steady_clock::now();
  state_->cv_.notify_all();
}

void DaemonState::StartDraining() {
  std::lock_guard<std::mutex> lock(mu_);
  draining_ = true;
  cv_.notify_all();
}

bool DaemonState::WaitForExit(std::chrono::seconds idle) {
  std::unique_lock<std::mutex> lock(mu_);
  for (;;) {
    if (draining_) return false;
    const auto now = std::chrono::steady_clock::now();
    if (idle.count() > 0 && sessions_active_ == 0 &&
        now - last_activity_ >= idle) {
      return true;
    }
    cv_.wait_for(lock, std::chrono::seconds(1));
  }
}

void DaemonState::WaitForSessions(std::chrono::seconds grace) {
  std::unique_lock<std::mutex> lock(mu_);
  cv_.wait_for(lock, grace, [&] { return sessions_active_ == 0; });
}

int64_t DaemonState::uptime_seconds() const {
  return std::chrono::duration_cast<std::chrono::seconds>(std::chrono::steady_clock::now() -
                                                          started_)
      .count();
}

}  // namespace abx::bridge
