#include "bridge/core/bridge_core.h"

#include "bridge/upstream/http_client.h"

namespace abx::core {

Result<std::unique_ptr<BridgeCore>> BridgeCore::Create() {
  std::string error;
  auto client = upstream::HttpClient::Create(upstream::HttpClientOptions(), &error);
  if (!client) return MakeError(ErrorCode::kNotInitialized, "HTTP client: " + error);
  return std::unique_ptr<BridgeCore>(new BridgeCore(std::move(client)));
}

BridgeCore::BridgeCore(std::unique_ptr<upstream::HttpClient> client)
    : client_(std::move(client)), http_(std::make_unique<Http>(client_.get())) {}

BridgeCore::~BridgeCore() = default;

std::shared_ptr<Upstream> BridgeCore::UpstreamFor(const ProviderConfig& config) {
  std::lock_guard<std::mutex> lock(mu_);
  auto& slot = upstreams_[config.CredentialScope()];
  if (!slot) slot = std::make_shared<Upstream>(http_.get(), config.lifecycle_url, config.api_key);
  return slot;
}

BridgeCore::Counters BridgeCore::counters() const {
  Counters c;
  c.requests_total = requests_total_.load();
  c.upstream_requests = client_->counters().requests_sent.load();
  c.upstream_connections = client_->counters().connections_opened.load();
  c.streams_active = streams_active_.load();
  std::lock_guard<std::mutex> lock(mu_);
  for (const auto& [scope, upstream] : upstreams_) {
    c.cached_sandboxes += static_cast<int64_t>(upstream->cached_sandboxes());
  }
  return c;
}

}  // namespace abx::core
