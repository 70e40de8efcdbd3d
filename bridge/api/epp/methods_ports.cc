// ports.url
#include "bridge/api/epp/methods.h"
#include "bridge/api/epp/params.h"
#include "bridge/api/epp/session.h"
#include "bridge/base/json.h"
#include "bridge/core/bridge_core.h"
#include "bridge/core/sandboxes/ports.h"

namespace abx::epp {

Result<std::string> PortsUrl(Request& req) {
  Params p(req.params());
  ABX_ASSIGN_OR_RETURN(std::string id, SandboxId(p));
  ABX_ASSIGN_OR_RETURN(auto port, p.Int("port"));
  if (!port || *port < 1 || *port > 65535) {
    return InvalidParams("port", "port must be between 1 and 65535");
  }
  ABX_ASSIGN_OR_RETURN(std::optional<int64_t> expires, p.Int("expires"));
  core::Ports ports(req.session().upstream().get(), &req.session().config());
  ABX_ASSIGN_OR_RETURN(core::PortUrl url, ports.Url(id, static_cast<int>(*port), expires, &req.cancel()));
  std::string out = "{\"url\":" + json::Quote(url.url) + ",\"headers\":" + json::ObjectOfStrings(url.headers);
  if (!url.expires_at.empty()) out += ",\"expires_at\":" + json::Quote(url.expires_at);
  return out + "}";
}

}  // namespace abx::epp
