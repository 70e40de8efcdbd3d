#pragma once
// What the daemon's services share: the core, session accounting, draining and idleness.

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>

#include "bridge/core/bridge_core.h"
#include "bridge/epp/request_pool.h"

namespace abx::bridge {

class DaemonState {
 public:
  explicit DaemonState(std::unique_ptr<core::BridgeCore> core);

  core::BridgeCore& core() { return *core_; }
  // The threads every session's requests run on.
  epp::RequestPool& request_pool() { return request_pool_; }

  // Counts a session for as long as the returned lease lives; null while draining.
  class SessionLease {
   public:
    explicit SessionLease(DaemonState* state) : state_(state) {}
    ~SessionLease();

   private:
    DaemonState* state_;
  };
  std::unique_ptr<SessionLease> BeginSession();

  // Refuse new sessions from now on; wakes WaitForExit.
  void StartDraining();
  bool draining() const { return draining_.load(); }

  // Returns when draining and no session is left, or when no session has been open for
  // `idle` (0: never idle out). Returns true for an idle exit.
  bool WaitForExit(std::chrono::seconds idle);
  // Waits up to `grace` for the open sessions to finish.
  void WaitForSessions(std::chrono::seconds grace);

  int64_t sessions_active() const { return sessions_active_.load(); }
  int64_t sessions_total() const { return sessions_total_.load(); }
  int64_t uptime_seconds() const;

 private:
  std::unique_ptr<core::BridgeCore> core_;
  epp::RequestPool request_pool_;
  const std::chrono::steady_clock::time_point started_;
  std::atomic<bool> draining_{false};
  std::atomic<int64_t> sessions_active_{0};
  std::atomic<int64_t> sessions_total_{0};
  std::mutex mu_;
  std::condition_variable cv_;
  std::chrono::steady_clock::time_point last_activity_;
};

}  // namespace abx::bridge
