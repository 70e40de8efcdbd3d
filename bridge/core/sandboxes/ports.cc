#include "bridge/core/sandboxes/ports.h"

#include "bridge/opensandbox/egress_client.h"
#include "bridge/opensandbox/lifecycle_client.h"

namespace abx::core {

Result<PortUrl> Ports::Url(const std::string& sandbox_id, int port, CancelToken* cancel) {
  if (port == opensandbox::kEgressPort) {
    // Its endpoint's headers are the sidecar's token, a secret (docs/mapping.md, ports.url).
    return InvalidParams("port", "port 18080 is the sandbox's egress sidecar, whose headers are its token: its "
                                 "rules are read and changed with network.policy.get, .patch and .delete");
  }
  opensandbox::LifecycleClient lifecycle = upstream_->Lifecycle(*config_);
  ABX_ASSIGN_OR_RETURN(opensandbox::Endpoint endpoint,
                       lifecycle.GetEndpoint(sandbox_id, port, config_->use_server_proxy, cancel));
  PortUrl out;
  out.url = ExecdBaseUrl(config_->lifecycle_url, endpoint.endpoint);
  out.headers.insert(endpoint.headers.begin(), endpoint.headers.end());
  return out;
}

}  // namespace abx::core
