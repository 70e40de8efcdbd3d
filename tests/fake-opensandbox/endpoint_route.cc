// GET /sandboxes/<id>/endpoints/<port> (docs/opensandbox.md §1.10): where a port of a
// sandbox is reached, as the runtime and the ingress configuration say, and signed
// routes (?expires=<Unix s>), refused in upstream's order: use_server_proxy, the Docker
// runtime, the port, the expiry, the sandbox, the gateway mode, the signing keys.

#include <chrono>

#include "rapidjson/stringbuffer.h"
#include "rapidjson/writer.h"
#include "tests/fake-opensandbox/egress_sidecar.h"
#include "tests/fake-opensandbox/ingress_gateway.h"
#include "tests/fake-opensandbox/lifecycle_context.h"
#include "tests/fake-opensandbox/lifecycle_errors.h"
#include "tests/fake-opensandbox/lifecycle_json.h"
#include "tests/fake-opensandbox/query_params.h"
#include "tests/fake-opensandbox/signed_route.h"

namespace fake_opensandbox {
namespace {

using Headers = std::vector<std::pair<std::string, std::string>>;

struct Endpoint {
  std::string endpoint;
  Headers headers;  // in upstream's order
};

// The signed part of a route: "{expires_b36}-{signature}" pieces.
struct RouteSignaturePart {
  std::string expires_b36;
  std::string signature;
};

// helpers.py's format_ingress_endpoint.
Endpoint IngressEndpoint(const LifecycleContext& ctx, const std::string& id, const std::string& port,
                         const std::optional<RouteSignaturePart>& signed_part) {
  const std::string address = GatewayAddress(ctx.config.ingress_route_mode, ctx.gateway_port);
  const std::string suffix = signed_part ? "-" + signed_part->expires_b36 + "-" + signed_part->signature : "";
  Endpoint out;
  switch (ctx.config.ingress_route_mode) {
    case IngressRouteMode::kWildcard:
      out.endpoint = id + "-" + port + suffix + "." + address.substr(2);
      break;
    case IngressRouteMode::kUri:
      out.endpoint = address + "/" + id + "/" + port +
                     (signed_part ? "/" + signed_part->expires_b36 + "/" + signed_part->signature : "");
      break;
    case IngressRouteMode::kHeader:
      out.endpoint = address;
      out.headers.emplace_back("OpenSandbox-Ingress-To", id + "-" + port + suffix);
      break;
    case IngressRouteMode::kNone:
      break;
  }
  return out;
}

void SendEndpoint(httplib::Response& res, const Endpoint& endpoint) {
  rapidjson::StringBuffer buffer;
  JsonWriter w(buffer);
  w.StartObject();
  w.Key("endpoint");
  WriteString(w, endpoint.endpoint);
  if (!endpoint.headers.empty()) {
    w.Key("headers");
    w.StartObject();
    for (const auto& [name, value] : endpoint.headers) {
      w.Key(name.c_str());
      WriteString(w, value);
    }
    w.EndObject();
  }
  w.EndObject();
  SendJson(res, 200, buffer.GetString());
}

void AddEgressHeader(const SandboxInfo& info, long long port, Endpoint* endpoint) {
  if (port == kEgressPort && info.has_network_policy) endpoint->headers.emplace_back(kEgressAuthHeader, info.egress_token);
}

// kubernetes_service.py's get_endpoint with expires, after the checks that need no
// sandbox: the sandbox, then the configuration, then the signature.
void SendSignedEndpoint(httplib::Response& res, LifecycleContext* ctx, const std::string& id, long long port,
                        long long expires) {
  if (port < 1 || port > 65535) {
    return SendCodeMessage(res, 400, RuntimeNamespace(*ctx) + "INVALID_PORT", "Port must be between 1 and 65535.");
  }
  if (expires < 0) {
    return SendCodeMessage(res, 400, "SANDBOX::INVALID_PARAMETER",
                           "expires must be a non-negative Unix timestamp (uint64).");
  }
  const long long now =
      std::chrono::duration_cast<std::chrono::seconds>(ctx->clock.Now().time_since_epoch()).count();
  if (expires <= now) {
    return SendCodeMessage(res, 400, "SANDBOX::INVALID_PARAMETER",
                           "expires (" + std::to_string(expires) + ") must be greater than current time (" +
                               std::to_string(now) + ").");
  }
  auto info = ctx->registry->Get(id, false);
  if (!info) return SendSandboxNotFound(res, *ctx, id);
  const FakeConfig& config = ctx->config;
  if (config.ingress_route_mode == IngressRouteMode::kNone) {
    return SendCodeMessage(res, 400, "SANDBOX::INVALID_PARAMETER",
                           "Signed routes require ingress.mode = 'gateway'. Configure ingress gateway or omit the "
                           "expires parameter.");
  }
  const SigningKey* active = nullptr;
  for (const SigningKey& key : config.signing_keys) {
    if (key.id == config.active_signing_key) active = &key;
  }
  if (!active) {
    return SendCodeMessage(res, 400, "SANDBOX::INVALID_PARAMETER",
                           "Signed routes require ingress.secure_access to be configured with signing keys. "
                           "Configure secure_access or omit the expires parameter.");
  }
  // The server signs for any sandbox, secure or not, and adds no access header.
  RouteSignaturePart part{Base36(static_cast<uint64_t>(expires)),
                          RouteSignature(active->secret, active->id, id, static_cast<int>(port),
                                         static_cast<uint64_t>(expires))};
  Endpoint endpoint = IngressEndpoint(*ctx, id, std::to_string(port), part);
  AddEgressHeader(*info, port, &endpoint);
  SendEndpoint(res, endpoint);
}

void HandleEndpoint(const httplib::Request& req, httplib::Response& res, LifecycleContext* ctx) {
  std::string id = req.matches[1];
  std::string port_text = req.matches[2];
  ValidationErrors errors;
  auto port = ParseQueryInt(port_text);
  if (!port) AddIntParsingError(errors, {std::string("path"), std::string("port")}, port_text);
  bool use_server_proxy = false;
  if (req.has_param("use_server_proxy")) {
    std::string text = req.get_param_value("use_server_proxy");
    auto value = ParseQueryBool(text);
    if (!value) {
      errors.AddWithStringInput("bool_parsing",
                                {std::string("query"), std::string("use_server_proxy")},
                                "Input should be a valid boolean, unable to interpret input", text);
    } else {
      use_server_proxy = *value;
    }
  }
  std::optional<long long> expires;
  if (req.has_param("expires") && ctx->config.signed_routes) {
    std::string text = req.get_param_value("expires");
    expires = ParseQueryInt(text);
    if (!expires) AddIntParsingError(errors, {std::string("query"), std::string("expires")}, text);
  }
  if (!errors.empty()) return SendJson(res, 422, errors.ToJson());
  if (expires) {
    if (use_server_proxy) {  // lifecycle.py, before the runtime's service
      return SendCodeMessage(res, 400, "SANDBOX::INVALID_PARAMETER",
                             "use_server_proxy cannot be combined with expires; signed endpoints require the "
                             "gateway route.");
    }
    if (ctx->config.runtime == Runtime::kDocker) {
      return SendCodeMessage(res, 400, "SANDBOX::API_NOT_SUPPORTED",
                             "Signed routes (expires parameter) are not supported when runtime.type='docker'. "
                             "Use the Kubernetes runtime for signed routes.");
    }
    return SendSignedEndpoint(res, ctx, id, *port, *expires);
  }
  auto info = ctx->registry->Get(id, false);
  if (!info) return SendSandboxNotFound(res, *ctx, id);
  if (*port < 1 || *port > 65535) {
    return SendCodeMessage(res, 400, RuntimeNamespace(*ctx) + "INVALID_PORT",
                           "Port must be between 1 and 65535.");
  }
  const std::string p = std::to_string(*port);
  const bool gateway = ctx->config.ingress_route_mode != IngressRouteMode::kNone;
  Endpoint endpoint;
  if (use_server_proxy) {
    endpoint.endpoint = "127.0.0.1:" + std::to_string(ctx->port) + "/sandboxes/" + id + "/proxy/" + p;
  } else if (gateway) {
    endpoint = IngressEndpoint(*ctx, id, p, std::nullopt);
  } else if (*port == kEgressPort && info->egress_port > 0 && ctx->config.runtime == Runtime::kKubernetes) {
    // A pod's egress sidecar is its own container port (<pod IP>:18080), not behind execd.
    endpoint.endpoint = "127.0.0.1:" + std::to_string(info->egress_port);
  } else {
    endpoint.endpoint = "127.0.0.1:" + std::to_string(info->execd_port) + "/proxy/" + p;
  }
  // The headers of the port's own resolution, kept behind the server proxy too (which
  // itself never sends the access header on: its callers must).
  if (gateway && use_server_proxy) {
    endpoint.headers = IngressEndpoint(*ctx, id, p, std::nullopt).headers;
  }
  if (!info->secure_access_token.empty()) {
    endpoint.headers.emplace_back("OpenSandbox-Secure-Access", info->secure_access_token);
  }
  AddEgressHeader(*info, *port, &endpoint);
  SendEndpoint(res, endpoint);
}

}  // namespace

void RegisterEndpointRoute(httplib::Server& server, LifecycleContext* ctx) {
  server.Get(std::string(kV1Prefix) + "/sandboxes/([^/]+)/endpoints/([^/]+)",
             [ctx](const httplib::Request& req, httplib::Response& res) { HandleEndpoint(req, res, ctx); });
}

}  // namespace fake_opensandbox
