#pragma once
// State kept for one server and one credential: the execd endpoints of its sandboxes.
// Sessions holding the same server URL and API key share one Upstream; a session with
// another key gets another, so a cached endpoint is never served across credentials.

#include <map>
#include <mutex>
#include <string>

#include "bridge/core/config.h"
#include "bridge/core/execd_client.h"
#include "bridge/core/lifecycle_client.h"

namespace abx::core {

class Upstream {
 public:
  Upstream(Http* http, std::string lifecycle_url, std::string api_key)
      : http_(http), lifecycle_url_(std::move(lifecycle_url)), api_key_(std::move(api_key)) {}

  Http* http() { return http_; }

  // A lifecycle client with the session's deadline.
  LifecycleClient Lifecycle(const ProviderConfig& config) const;

  // The execd of `sandbox_id`, from the cache or resolved through the lifecycle API.
  Result<ExecdClient> Execd(const std::string& sandbox_id, const ProviderConfig& config,
                            const CancelToken* cancel);
  // Drops what is cached for a sandbox (killed, gone, or its execd stopped answering).
  void Forget(const std::string& sandbox_id);
  size_t cached_sandboxes() const;

  // exec_id of the command started with ABX_EXEC_TAG=`tag` (see processes.h).
  void RememberExec(const std::string& sandbox_id, const std::string& tag,
                    const std::string& exec_id);
  std::string ExecIdForTag(const std::string& sandbox_id, const std::string& tag) const;

 private:
  Http* http_;
  const std::string lifecycle_url_;
  const std::string api_key_;
  mutable std::mutex mu_;
  std::map<std::string, ExecdTarget> endpoints_;  // by sandbox id + access mode
  std::map<std::string, std::string> exec_tags_;   // sandbox id + "|" + tag → exec_id
};

// http:// or https:// (the lifecycle URL's scheme) + an endpoint without scheme.
std::string ExecdBaseUrl(const std::string& lifecycle_url, const std::string& endpoint);

}  // namespace abx::core
