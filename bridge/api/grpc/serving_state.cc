#include "bridge/api/grpc/serving_state.h"

namespace abx::api {

ServingState::ServingState(std::unique_ptr<core::BridgeCore> core, TaskRunner* requests,
                           std::function<void()> release_idle)
    : core_(std::move(core)),
      requests_(requests),
      release_idle_(std::move(release_idle)),
      started_(std::chrono::steady_clock::now()),
      last_activity_(started_) {}

std::unique_ptr<ServingState::SessionLease> ServingState::BeginSession() {
  std::lock_guard<std::mutex> lock(mu_);
  if (draining_) return nullptr;
  ++sessions_active_;
  ++sessions_total_;
  last_activity_ = std::chrono::steady_clock::now();
  return std::make_unique<SessionLease>(this);
}

ServingState::SessionLease::~SessionLease() {
  std::lock_guard<std::mutex> lock(state_->mu_);
  --state_->sessions_active_;
  state_->last_activity_ = std::chrono::steady_clock::now();
  state_->cv_.notify_all();
}

void ServingState::StartDraining() {
  std::lock_guard<std::mutex> lock(mu_);
  draining_ = true;
  cv_.notify_all();
}

bool ServingState::WaitForExit(std::chrono::seconds idle) {
  std::unique_lock<std::mutex> lock(mu_);
  for (;;) {
    if (draining_) return false;
    const auto now = std::chrono::steady_clock::now();
    // Work owed to the server (a snapshot nobody got an answer for, to be deleted once
    // the server is done with it) keeps an idle daemon up; an orderly stop does not wait.
    if (idle.count() > 0 && sessions_active_ == 0 && core_->keep_alives() == 0 &&
        now - last_activity_ >= idle) {
      return true;
    }
    cv_.wait_for(lock, std::chrono::seconds(1));
  }
}

void ServingState::WaitForSessions(std::chrono::seconds grace) {
  std::unique_lock<std::mutex> lock(mu_);
  cv_.wait_for(lock, grace, [&] { return sessions_active_ == 0; });
}

void ServingState::ReleaseIdleIfNoSession() {
  if (sessions_active() == 0 && release_idle_) release_idle_();
}

int64_t ServingState::uptime_seconds() const {
  return std::chrono::duration_cast<std::chrono::seconds>(std::chrono::steady_clock::now() -
                                                          started_)
      .count();
}

}  // namespace abx::api
