// ports.url
#include "bridge/core/bridge_core.h"
#include "bridge/core/json.h"
#include "bridge/core/ports.h"
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
  core::Ports ports(req.session().upstream().get(), &req.session().config());
  ABX_ASSIGN_OR_RETURN(core::PortUrl url, ports.Url(id, static_cast<int>(*port), &req.cancel()));
  return "{\"url\":" + core::json::Quote(url.url) + ",\"headers\":" +
         core::json::ObjectOfStrings(url.headers) + "}";
}

}  // namespace abx::epp
