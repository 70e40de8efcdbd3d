#pragma once
// What the gRPC services share with the daemon that serves them: the core, the threads
// requests run on, session accounting, draining and idleness.

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <string>

#include "bridge/base/descriptor_box.h"
#include "bridge/base/task_runner.h"
#include "bridge/core/bridge_core.h"

namespace abx::api {

class ServingState {
 public:
  // `requests` runs every session's requests and outlives this state. `release_idle`
  // runs when the last session has ended: the daemon gives back the threads and memory
  // it kept for reuse, so an idle bridge is small.
  ServingState(std::unique_ptr<core::BridgeCore> core, TaskRunner* requests,
               std::function<void()> release_idle);

  core::BridgeCore& core() { return *core_; }
  TaskRunner& requests() { return *requests_; }
  // Descriptors the shims hand over beside gRPC (files.transfer), and the socket they
  // come in on (set by the daemon before serving; empty when it could not be bound).
  DescriptorBox& descriptors() { return descriptors_; }
  const std::string& descriptor_socket() const { return descriptor_socket_; }
  void set_descriptor_socket(std::string path) { descriptor_socket_ = std::move(path); }
  // Called by a front door as a session ends: with no session left, runs release_idle.
  void ReleaseIdleIfNoSession();

  // Counts a session for as long as the returned lease lives; null while draining.
  class SessionLease {
   public:
    explicit SessionLease(ServingState* state) : state_(state) {}
    ~SessionLease();

   private:
    ServingState* state_;
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
  TaskRunner* const requests_;
  const std::function<void()> release_idle_;
  DescriptorBox descriptors_;
  std::string descriptor_socket_;
  const std::chrono::steady_clock::time_point started_;
  std::atomic<bool> draining_{false};
  std::atomic<int64_t> sessions_active_{0};
  std::atomic<int64_t> sessions_total_{0};
  std::mutex mu_;
  std::condition_variable cv_;
  std::chrono::steady_clock::time_point last_activity_;
};

}  // namespace abx::api
