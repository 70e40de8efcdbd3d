// ports.url
#include "bridge/core/bridge_core.h"
#include "bridge/core/json.h"
#include "bridge/epp/methods.h"
#include "bridge/epp/params.h"
#include "bridge/epp/session.h"

namespace abx::epp {

core::Result<std::string> PortsUrl(Request& req) {
  Params p(req.params());
  ABX_ASSIGN_OR_RETURN(std::string id, SandboxId(p));
  ABX_ASSIGN_OR_RETURN(auto port, p.Int("port"));
  if (!port || *port < 1 || *port > 65535) {
    return core::InvalidParams("port", "port must be between 1 and 65535");
  }
  const core::ProviderConfig& config = req.session().config();
  core::LifecycleClient lifecycle = req.session().upstream()->Lifecycle(config);
  ABX_ASSIGN_OR_RETURN(core::Endpoint endpoint,
                       lifecycle.GetEndpoint(id, static_cast<int>(*port), config.use_server_proxy,
                                             &req.cancel()));
  std::map<std::string, std::string> headers(endpoint.headers.begin(), endpoint.headers.end());
  return "{\"url\":" + core::json::Quote(core::ExecdBaseUrl(config.lifecycle_url, endpoint.endpoint)) +
         ",\"headers\":" + core::json::ObjectOfStrings(headers) + "}";
}

}  // namespace abx::epp
