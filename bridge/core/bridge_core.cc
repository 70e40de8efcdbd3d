#include "bridge/core/bridge_core.h"

#include <algorithm>
#include <tuple>

#include <unistd.h>

#include "bridge/core/fnv_hash.h"
#include "bridge/core/random_hex.h"

namespace abx::core {
Result<std::unique_ptr<BridgeCore>> BridgeCore::Create(std::string pool_scope) {
  ABX_ASSIGN_OR_RETURN(auto http, opensandbox::HttpCaller::Create());
  return std::unique_ptr<BridgeCore>(new BridgeCore(std::move(http), std::move(pool_scope)));
}

BridgeCore::BridgeCore(std::unique_ptr<opensandbox::HttpCaller> http, std::string pool_scope)
    : http_(std::move(http)),
      pool_scope_(std::move(pool_scope)),
      owner_(FnvName("o", {pool_scope_})),
      instance_(std::to_string(getpid()) + "-" + RandomHex(8)),
      background_(kMaxBackgroundThreads) {}

// The pool first (the core's parts), while the background tasks still run: its timers stop
// re-arming and its sandboxes are killed (the daemon has done so already at its orderly stop).
BridgeCore::~BridgeCore() {
  parts_.StopAll();
  // Watches (parts of each EndpointCache) end while the background tasks their hosts'
  // cancels post to still exist.
  std::map<std::string, std::shared_ptr<EndpointCache>> upstreams;
  {
    std::lock_guard<std::mutex> lock(mu_);
    upstreams = upstreams_;
  }
  for (auto& [scope, upstream] : upstreams) upstream->parts().StopAll();
}

void BridgeCore::RunInBackground(std::function<void()> task) { background_.Run(std::move(task)); }

void BridgeCore::RunInBackgroundAt(std::chrono::steady_clock::time_point when,
                                   std::function<void()> task) {
  background_.RunAt(when, std::move(task));
}

std::shared_ptr<EndpointCache> BridgeCore::EndpointCacheFor(const ProviderConfig& config) {
  std::lock_guard<std::mutex> lock(mu_);
  auto& slot = upstreams_[config.CredentialScope()];
  if (!slot) {
    slot = std::make_shared<EndpointCache>(http_.get(), config.lifecycle_url, config.api_key);
    std::string& label = credential_labels_[config.api_key];
    if (label.empty()) {
      label = config.api_key.empty()
                  ? "no credential"
                  : "credential " + std::to_string(credential_labels_.size() -
                                                   credential_labels_.count(""));
    }
    scope_labels_[config.CredentialScope()] = label;
  }
  return slot;
}

BridgeCore::Counters BridgeCore::counters() const {
  Counters c;
  c.requests_total = requests_total_.load();
  c.early_writes_used = early_writes_used_.load();
  c.early_writes_dropped = early_writes_dropped_.load();
  c.upstream_requests = http_->requests_sent();
  c.upstream_connections = http_->connections_opened();
  c.streams_active = streams_active_.load();
  std::lock_guard<std::mutex> lock(mu_);
  for (const auto& [scope, upstream] : upstreams_) {
    c.cached_sandboxes += static_cast<int64_t>(upstream->cached_sandboxes());
  }
  return c;
}

std::string BridgeCore::CredentialLabel(const std::string& scope) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto label = scope_labels_.find(scope);
  return label == scope_labels_.end() ? "" : label->second;
}

std::vector<BridgeCore::CachedSandbox> BridgeCore::CachedSandboxes() const {
  std::vector<CachedSandbox> out;
  std::lock_guard<std::mutex> lock(mu_);
  for (const auto& [scope, upstream] : upstreams_) {
    const std::string server = WithoutUserInfo(upstream->lifecycle_url());
    auto label = scope_labels_.find(scope);
    std::map<std::string, CachedSandbox> by_id;
    for (EndpointCache::CachedEndpoint& endpoint : upstream->CachedEndpoints()) {
      CachedSandbox& sandbox = by_id[endpoint.sandbox_id];
      sandbox.sandbox_id = endpoint.sandbox_id;
      sandbox.server = server;
      sandbox.credential = label == scope_labels_.end() ? "" : label->second;
      sandbox.endpoints.push_back(std::move(endpoint));
    }
    for (auto& [id, sandbox] : by_id) out.push_back(std::move(sandbox));
  }
  std::sort(out.begin(), out.end(), [](const CachedSandbox& a, const CachedSandbox& b) {
    return std::tie(a.server, a.credential, a.sandbox_id) <
           std::tie(b.server, b.credential, b.sandbox_id);
  });
  return out;
}

}  // namespace abx::core
