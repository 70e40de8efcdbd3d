#pragma once
// The bridge's one core, shared by every session and both front doors (EPP and the
// typed gRPC services): the pooled upstream HTTP client, the per-credential state, and
// the counters.

#include <atomic>
#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "bridge/base/error.h"
#include "bridge/core/background_tasks.h"
#include "bridge/core/config.h"
#include "bridge/core/endpoint_cache.h"
#include "bridge/core/parts.h"
#include "bridge/opensandbox/http_caller.h"

namespace abx::core {

class BridgeCore {
 public:
  // `pool_scope` keys the warm pool's sandboxes: the build and socket (two daemons never
  // take each other's) and a secret of the user's (bridge/daemon/pool_salt.h).
  static Result<std::unique_ptr<BridgeCore>> Create(std::string pool_scope = "");
  ~BridgeCore();

  // The state for the config's server and credential; created on first use, shared after.
  std::shared_ptr<EndpointCache> EndpointCacheFor(const ProviderConfig& config);
  // What capabilities above the core's root keep once per daemon: the warm pool
  // (WarmPoolOf, warm_pool.h). Stopped first when the core goes.
  Parts& parts() { return parts_; }
  // The warm pool's key scope (Create's `pool_scope`).
  const std::string& pool_scope() const { return pool_scope_; }
  opensandbox::HttpCaller& http() { return *http_; }

  struct Counters {
    int64_t requests_total = 0;
    int64_t upstream_requests = 0;
    int64_t upstream_connections = 0;
    int64_t cached_sandboxes = 0;
    int64_t streams_active = 0;
    int64_t early_writes_used = 0;
    int64_t early_writes_dropped = 0;
  };
  Counters counters() const;
  void CountRequest() { ++requests_total_; }
  void CountEarlyWrite(bool used) { ++(used ? early_writes_used_ : early_writes_dropped_); }

  // What the upstreams have cached, one entry per sandbox, server and credential, for
  // `abx-opensandbox-bridge sandboxes` (Bridge.ListCachedSandboxes).
  struct CachedSandbox {
    std::string sandbox_id;
    std::string server;      // the lifecycle URL, user info removed
    std::string credential;  // "credential N" (first-seen order of API keys): never the key
    std::vector<EndpointCache::CachedEndpoint> endpoints;
  };
  std::vector<CachedSandbox> CachedSandboxes() const;
  // "credential N" for a CredentialScope() seen before, else "".
  std::string CredentialLabel(const std::string& scope) const;

  // Runs `task` on one of at most kMaxBackgroundThreads threads (queued when all are
  // busy), for work that may outlive the request that started it (a cancel's interrupt
  // of a command at execd). A storm of cancels thus costs at most that many threads, each
  // held for one interrupt's request. The core waits for every such task when it is
  // destroyed, so none uses the HTTP client after it is gone.
  static constexpr size_t kMaxBackgroundThreads = 16;
  void RunInBackground(std::function<void()> task);
  // The same once `when` has come; the wait holds no thread.
  void RunInBackgroundAt(std::chrono::steady_clock::time_point when, std::function<void()> task);
  // RunInBackgroundAt and the stopping flag, for core classes (snapshots.h).
  BackgroundRunner Runner() {
    return BackgroundRunner{
        [this](std::chrono::milliseconds delay, std::function<void()> task) {
          RunInBackgroundAt(std::chrono::steady_clock::now() + delay, std::move(task));
        },
        [this] { return background_.stopping(); },
        [this] { return KeepAlive(); }};
  }

  // Who runs a watch host (watch_scripts.h): `owner` names this bridge's line (its build,
  // socket and user, hashed: BridgeCore::Create's pool_scope), the same across restarts;
  // `instance` this run of it, "<pid>-<random>". A bridge ends the hosts of its owner
  // whose bridge process is gone (a predecessor still draining keeps its own).
  const std::string& owner() const { return owner_; }
  const std::string& instance() const { return instance_; }

  // How long what the bridge keeps running in a sandbox (a command's stdin pipe, a watch
  // host) outlives the bridge's pings: the bridge pings every third of it. The daemon sets
  // it once, before any session (ABX_OPENSANDBOX_BRIDGE_SANDBOX_LEASE).
  static constexpr int kDefaultSandboxLeaseSeconds = 90;
  void set_sandbox_lease_seconds(int seconds) { sandbox_lease_s_ = seconds; }
  int sandbox_lease_seconds() const { return sandbox_lease_s_; }

  // Held while work owed to the server is under way with no session waiting for it: an
  // idle daemon does not exit before it is done (an orderly stop still does).
  std::shared_ptr<void> KeepAlive() {
    ++keep_alives_;
    return std::shared_ptr<void>(nullptr, [this](void*) { --keep_alives_; });
  }
  int64_t keep_alives() const { return keep_alives_.load(); }

  // Held by a running exec stream, for the stats.
  class StreamLease {
   public:
    explicit StreamLease(BridgeCore* core) : core_(core) { ++core_->streams_active_; }
    ~StreamLease() { --core_->streams_active_; }

   private:
    BridgeCore* core_;
  };

 private:
  BridgeCore(std::unique_ptr<opensandbox::HttpCaller> http, std::string pool_scope);
  std::unique_ptr<opensandbox::HttpCaller> http_;
  mutable std::mutex mu_;
  std::map<std::string, std::shared_ptr<EndpointCache>> upstreams_;  // by CredentialScope()
  // A label per API key, numbered as keys are first seen; the same key on two servers
  // gets one label. Only the label ever leaves the bridge.
  std::map<std::string, std::string> credential_labels_;  // by API key
  std::map<std::string, std::string> scope_labels_;       // by CredentialScope()
  std::atomic<int64_t> requests_total_{0};
  std::atomic<int64_t> early_writes_used_{0};
  std::atomic<int64_t> early_writes_dropped_{0};
  std::atomic<int64_t> streams_active_{0};
  std::atomic<int64_t> keep_alives_{0};
  int sandbox_lease_s_ = kDefaultSandboxLeaseSeconds;
  const std::string pool_scope_;
  const std::string owner_;
  const std::string instance_;
  // Before background_: its tasks use the pool, so it goes after them.
  Parts parts_;
  // Last: destroyed first, waiting for its tasks while everything they use still exists.
  BackgroundTasks background_;
};

}  // namespace abx::core
