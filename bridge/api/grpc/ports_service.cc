#include "bridge/api/grpc/ports_service.h"

#include <string>

#include "bridge/core/sandboxes/ports.h"

namespace abx::api {

namespace pb = abx::opensandbox::v1;

grpc::ServerUnaryReactor* PortsService::Url(grpc::CallbackServerContext* context, const pb::PortUrlRequest* request,
                               pb::PortUrlReply* reply) {
  return Serve(
      deps_, context, "Ports.Url", request->config(), [=](TypedCall& call) -> Status {
        ABX_ASSIGN_OR_RETURN(std::string id, Required(request->sandbox_id(), "sandbox_id"));
        if (request->port() < 1 || request->port() > 65535) {
          return InvalidParams("port", "port must be between 1 and 65535");
        }
        core::Ports ports(call.upstream(), &call.config());
        std::optional<int64_t> expires;
        if (request->has_expires()) expires = request->expires();
        ABX_ASSIGN_OR_RETURN(core::PortUrl url, ports.Url(id, request->port(), expires, call.cancel()));
        reply->set_url(url.url);
        reply->set_expires_at(url.expires_at);
        reply->mutable_headers()->insert(url.headers.begin(), url.headers.end());
        return OkStatus();
      });
}

}  // namespace abx::api
