#include "bridge/core/endpoint_cache.h"

#include "bridge/base/log.h"

namespace abx::core {
namespace {

constexpr int kExecdPort = 44772;

std::string CacheKey(const std::string& sandbox_id, const ProviderConfig& config) {
  return sandbox_id + (config.use_server_proxy ? "|proxy" : "|direct") + "|" +
         config.execd_access_token;
}

}  // namespace

std::string ExecdBaseUrl(const std::string& lifecycle_url, const std::string& endpoint) {
  const std::string scheme = lifecycle_url.rfind("https://", 0) == 0 ? "https://" : "http://";
  std::string base = endpoint;
  if (base.rfind("http://", 0) == 0 || base.rfind("https://", 0) == 0) {
    // A server that does add a scheme: keep it rather than doubling it.
  } else {
    base = scheme + base;
  }
  while (!base.empty() && base.back() == '/') base.pop_back();
  return base;
}

std::string DirectExecdEndpoint(const std::string& endpoint) {
  const size_t scheme = endpoint.find("://");
  const size_t host_start = scheme == std::string::npos ? 0 : scheme + 3;
  const size_t path = endpoint.find('/', host_start);
  if (path == std::string::npos || path == host_start) return endpoint;
  std::string rest = endpoint.substr(path);
  while (rest.size() > 1 && rest.back() == '/') rest.pop_back();
  return rest == "/proxy/" + std::to_string(kExecdPort) ? endpoint.substr(0, path) : endpoint;
}

opensandbox::LifecycleClient EndpointCache::Lifecycle(const ProviderConfig& config) const {
  opensandbox::LifecycleClient client(http_, lifecycle_url_, api_key_);
  client.set_timeout_ms(static_cast<int64_t>(config.request_timeout_s * 1000));
  return client;
}

Result<opensandbox::ExecdClient> EndpointCache::Execd(const std::string& sandbox_id, const ProviderConfig& config,
                                    const CancelToken* cancel) {
  const int64_t timeout_ms = static_cast<int64_t>(config.request_timeout_s * 1000);
  const std::string key = CacheKey(sandbox_id, config);
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = endpoints_.find(key);
    if (it != endpoints_.end()) return opensandbox::ExecdClient(http_, it->second.target, timeout_ms);
  }
  auto endpoint =
      Lifecycle(config).GetEndpoint(sandbox_id, kExecdPort, config.use_server_proxy, cancel);
  if (!endpoint.ok()) return endpoint.error();
  opensandbox::ExecdTarget target;
  target.base_url = ExecdBaseUrl(lifecycle_url_, config.use_server_proxy
                                                     ? endpoint->endpoint
                                                     : DirectExecdEndpoint(endpoint->endpoint));
  target.headers = endpoint->headers;
  if (const std::string* access = opensandbox::SecureAccessToken(target.headers)) log::RegisterSecret(*access);
  if (!config.execd_access_token.empty()) {
    target.headers.emplace_back("X-EXECD-ACCESS-TOKEN", config.execd_access_token);
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    endpoints_[key] = CacheEntry{target, sandbox_id, config.use_server_proxy,
                                 std::chrono::steady_clock::now()};
  }
  return opensandbox::ExecdClient(http_, std::move(target), timeout_ms);
}

namespace {

template <typename Map>
void ErasePrefix(Map* map, const std::string& prefix) {
  for (auto it = map->lower_bound(prefix);
       it != map->end() && it->first.compare(0, prefix.size(), prefix) == 0;) {
    it = map->erase(it);
  }
}

}  // namespace

void EndpointCache::Forget(const std::string& sandbox_id) {
  std::lock_guard<std::mutex> lock(mu_);
  ErasePrefix(&endpoints_, sandbox_id + "|");
  ErasePrefix(&exec_tags_, sandbox_id + "|");  // their order entries go at the next rebuild
  execd_versions_.erase(sandbox_id);
  execd_before_1019_.erase(sandbox_id);
  code_.ForgetReadiness(sandbox_id);
}

void EndpointCache::NoteExecdVersion(const std::string& sandbox_id, const std::string& version) {
  std::lock_guard<std::mutex> lock(mu_);
  execd_versions_[sandbox_id] = version;
}

std::optional<std::string> EndpointCache::SnapshotTemplate(const std::string& snapshot_id) const {
  std::lock_guard<std::mutex> lock(templates_mu_);
  auto it = snapshot_templates_.find(snapshot_id);
  if (it == snapshot_templates_.end()) return std::nullopt;
  return it->second;
}

void EndpointCache::NoteSnapshotTemplate(const std::string& snapshot_id, const std::string& template_name) {
  std::lock_guard<std::mutex> lock(templates_mu_);
  // Full: start over rather than track age; a forgotten one costs one request again.
  if (snapshot_templates_.size() >= kMaxSnapshotTemplates) snapshot_templates_.clear();
  snapshot_templates_[snapshot_id] = template_name;
}

std::optional<bool> EndpointCache::KnownBefore1019(const std::string& sandbox_id) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = execd_before_1019_.find(sandbox_id);
  if (it == execd_before_1019_.end()) return std::nullopt;
  return it->second;
}

void EndpointCache::NoteBefore1019(const std::string& sandbox_id, bool before) {
  std::lock_guard<std::mutex> lock(mu_);
  execd_before_1019_[sandbox_id] = before;
}

std::vector<EndpointCache::CachedEndpoint> EndpointCache::CachedEndpoints() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<CachedEndpoint> out;
  for (const auto& [key, entry] : endpoints_) {
    CachedEndpoint endpoint;
    endpoint.sandbox_id = entry.sandbox_id;
    endpoint.server_proxy = entry.server_proxy;
    endpoint.base_url = entry.target.base_url;
    endpoint.since = entry.since;
    auto version = execd_versions_.find(entry.sandbox_id);
    if (version != execd_versions_.end()) endpoint.execd_version = version->second;
    out.push_back(std::move(endpoint));
  }
  return out;
}

void EndpointCache::RememberExec(const std::string& sandbox_id, const std::string& tag,
                            const std::string& exec_id) {
  std::lock_guard<std::mutex> lock(mu_);
  std::string key = sandbox_id + "|" + tag;
  exec_tags_[key] = exec_id;
  exec_tag_order_.push_back(std::move(key));
  // The oldest go past the cap. The order also holds keys ForgetExec removed (tags are
  // unique): once it runs well ahead of the map it is rebuilt from the keys still there.
  while (exec_tags_.size() > kMaxRememberedExecs) {
    exec_tags_.erase(exec_tag_order_.front());
    exec_tag_order_.pop_front();
  }
  if (exec_tag_order_.size() > 2 * exec_tags_.size() + 64) {
    std::deque<std::string> live;
    for (std::string& k : exec_tag_order_) {
      if (exec_tags_.count(k) != 0) live.push_back(std::move(k));
    }
    exec_tag_order_.swap(live);
  }
}

void EndpointCache::ForgetExec(const std::string& sandbox_id, const std::string& tag) {
  std::lock_guard<std::mutex> lock(mu_);
  exec_tags_.erase(sandbox_id + "|" + tag);
}

std::string EndpointCache::ExecIdForTag(const std::string& sandbox_id, const std::string& tag) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = exec_tags_.find(sandbox_id + "|" + tag);
  return it == exec_tags_.end() ? std::string() : it->second;
}

size_t EndpointCache::cached_sandboxes() const {
  std::lock_guard<std::mutex> lock(mu_);
  return endpoints_.size();
}

std::optional<std::map<std::string, std::string>> EndpointCache::CachedTemplates(
    std::chrono::steady_clock::duration max_age) const {
  std::lock_guard<std::mutex> lock(templates_mu_);
  if (!templates_ || std::chrono::steady_clock::now() - templates_read_at_ > max_age) return std::nullopt;
  return templates_;
}

void EndpointCache::StoreTemplates(std::map<std::string, std::string> index, uint64_t generation) {
  std::lock_guard<std::mutex> lock(templates_mu_);
  if (generation != templates_generation_) return;
  templates_ = std::move(index);
  templates_read_at_ = std::chrono::steady_clock::now();
}

void EndpointCache::ForgetTemplates() {
  std::lock_guard<std::mutex> lock(templates_mu_);
  templates_.reset();
  snapshot_templates_.clear();  // a deleted version's name is asked for again (404: none)
  ++templates_generation_;
}

uint64_t EndpointCache::TemplatesGeneration() const {
  std::lock_guard<std::mutex> lock(templates_mu_);
  return templates_generation_;
}

}  // namespace abx::core
