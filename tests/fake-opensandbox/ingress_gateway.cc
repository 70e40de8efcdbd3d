#include "tests/fake-opensandbox/ingress_gateway.h"

#include <openssl/crypto.h>

#include <chrono>
#include <optional>

#include "tests/fake-opensandbox/counting_task_queue.h"
#include "tests/fake-opensandbox/http_forwarder.h"
#include "tests/fake-opensandbox/listen_backlog.h"
#include "tests/fake-opensandbox/listen_in_background.h"
#include "tests/fake-opensandbox/sandbox_port_target.h"
#include "tests/fake-opensandbox/signed_route.h"
#include "tests/fake-opensandbox/upgrade_tunnel.h"

namespace fake_opensandbox {
namespace {

constexpr char kIngressToHeader[] = "OpenSandbox-Ingress-To";
constexpr char kDeprecatedIngressHeader[] = "OPEN-SANDBOX-INGRESS";
constexpr char kSecureAccessHeader[] = "OpenSandbox-Secure-Access";
// The namespace upstream's gateway names in "not ready" (the fake has one).
constexpr char kNamespace[] = "opensandbox";

struct ParsedRoute {
  std::string sandbox_id;
  std::string port;  // digits, as the route names the port
  int port_number = 0;
  std::string expires_b36;  // both empty: an unsigned route
  std::string signature;
  std::optional<std::string> request_path;  // uri mode: what follows the route; else unchanged
  bool uri_signed_shape = false;            // uri mode read it as a signed route
};

struct Refusal {
  int status = 400;
  std::string reason;
};

// host_route_parse.go's parseHostRoute: the first label of the name is the route token.
// (Go's fallback for a token that is not one reads the port with Atoi; the fake wants a
// port as a route writes it, and says "invalid port format" for anything else.)
std::optional<ParsedRoute> ParseHostRoute(std::string host, Refusal* refusal) {
  for (const char* scheme : {"https://", "http://"}) {
    if (host.rfind(scheme, 0) == 0) host = host.substr(std::string(scheme).size());
  }
  const std::string label = host.substr(0, host.find('.'));
  const size_t dash = label.rfind('-');
  if (dash == std::string::npos || label[0] == '-') {
    refusal->reason = "invalid ingress route: invalid host: " + host;
    return std::nullopt;
  }
  auto token = ParseRouteToken(label);
  if (!token) {
    refusal->reason = "invalid ingress route: invalid port format: strconv.Atoi: parsing \"" +
                      label.substr(dash + 1) + "\": invalid syntax";
    return std::nullopt;
  }
  ParsedRoute route;
  route.sandbox_id = token->sandbox_id;
  route.port_number = token->port;
  route.port = std::to_string(token->port);
  route.expires_b36 = token->expires_b36;
  route.signature = token->signature;
  return route;
}

std::vector<std::string> SplitN(const std::string& text, char sep, size_t n) {
  std::vector<std::string> parts;
  size_t start = 0;
  while (parts.size() + 1 < n) {
    const size_t at = text.find(sep, start);
    if (at == std::string::npos) break;
    parts.push_back(text.substr(start, at - start));
    start = at + 1;
  }
  parts.push_back(text.substr(start));
  return parts;
}

// parseURILegacy: /{id}/{port}/<rest>.
std::optional<ParsedRoute> ParseUriLegacy(const std::string& path, Refusal* refusal) {
  const std::string trimmed = path.rfind('/', 0) == 0 ? path.substr(1) : path;
  const std::vector<std::string> parts = SplitN(trimmed, '/', 3);
  if (parts.size() < 2) {
    refusal->reason =
        "invalid URI path format: expected '/<sandbox-id>/<sandbox-port>/<path-to-request>', got: " + path;
    return std::nullopt;
  }
  if (parts[0].empty()) {
    refusal->reason = "missing sandbox-id or sandbox-port in URI path";
    return std::nullopt;
  }
  auto port = ParsePortSegment(parts[1]);
  if (!port) {
    refusal->reason = "invalid port format: invalid port \"" + parts[1] + "\"";
    return std::nullopt;
  }
  ParsedRoute route;
  route.sandbox_id = parts[0];
  route.port_number = *port;
  route.port = parts[1];
  route.request_path = parts.size() == 3 && !parts[2].empty() ? "/" + parts[2] : "/";
  return route;
}

// parseURIRoute: /{id}/{port}/{expires_b36}/{signature}/<rest> when the segments have
// those shapes, else the legacy form.
std::optional<ParsedRoute> ParseUriRoute(const std::string& path, Refusal* refusal) {
  const std::string trimmed = path.rfind('/', 0) == 0 ? path.substr(1) : path;
  const std::vector<std::string> parts = SplitN(trimmed, '/', 5);
  if (parts.size() >= 4 && !parts[0].empty()) {
    auto token = ParseRouteToken(parts[0] + "-" + parts[1] + "-" + parts[2] + "-" + parts[3]);
    if (token && token->signed_route && token->sandbox_id == parts[0] && ParsePortSegment(parts[1])) {
      ParsedRoute route;
      route.sandbox_id = parts[0];
      route.port_number = token->port;
      route.port = parts[1];
      route.expires_b36 = parts[2];
      route.signature = parts[3];
      route.request_path = parts.size() == 5 && !parts[4].empty() ? "/" + parts[4] : "/";
      route.uri_signed_shape = true;
      return route;
    }
  }
  auto route = ParseUriLegacy(path, refusal);
  if (!route) refusal->reason = "invalid ingress route: " + refusal->reason;
  return route;
}

bool EqualConstantTime(const std::string& a, const std::string& b) {
  if (a.size() != b.size()) return false;
  return a.empty() || CRYPTO_memcmp(a.data(), b.data(), a.size()) == 0;
}

void SendIngressError(httplib::Response& res, const Refusal& refusal) {
  res.status = refusal.status;
  res.set_header("X-Content-Type-Options", "nosniff");
  res.set_content("OpenSandbox Ingress: " + refusal.reason + "\n", "text/plain; charset=utf-8");
}

}  // namespace

std::string GatewayAddress(IngressRouteMode mode, int port) {
  return (mode == IngressRouteMode::kWildcard ? "*.localhost:" : "127.0.0.1:") + std::to_string(port);
}

std::unique_ptr<IngressGateway> IngressGateway::Start(const FakeConfig& config, SandboxRegistry* registry,
                                                      std::shared_ptr<FaultState> faults,
                                                      std::shared_ptr<ServerStats> stats, ServerClock clock,
                                                      std::string* error) {
  std::unique_ptr<IngressGateway> gateway(new IngressGateway());
  gateway->config_ = config;
  gateway->registry_ = registry;
  gateway->faults_ = std::move(faults);
  gateway->stats_ = std::move(stats);
  gateway->clock_ = clock;
  httplib::Server& server = gateway->server_;
  server.set_keep_alive_max_count(1000000000);
  server.set_read_timeout(60, 0);
  server.set_write_timeout(3600, 0);
  server.set_tcp_nodelay(true);
  // A thread per connection: event streams, kept-alive connections and WebSocket tunnels
  // hold theirs for long (counting_task_queue.h).
  std::shared_ptr<ServerStats> counted = gateway->stats_;
  server.new_task_queue = [counted] {
    return new CountingTaskQueue(counted, &counted->gateway_connections_accepted);
  };
  server.set_pre_routing_handler([](const httplib::Request& req, httplib::Response&) {
    // Range requests and bodies pass through untouched (http_forwarder.h).
    auto& request = const_cast<httplib::Request&>(req);
    request.ranges.clear();
    HideContentTypeFromBodyParsing(request);
    return httplib::Server::HandlerResponse::Unhandled;
  });
  IngressGateway* raw = gateway.get();
  auto handler = [raw](const httplib::Request& req, httplib::Response& res) { raw->Handle(req, res); };
  const std::string any = ".*";
  server.Get(any, handler);
  server.Post(any, handler);
  server.Put(any, handler);
  server.Patch(any, handler);
  server.Delete(any, handler);
  server.Options(any, handler);
  gateway->port_ = BindWithFullBacklog(server, 0);
  if (gateway->port_ <= 0) {
    *error = "the ingress gateway cannot listen on 127.0.0.1";
    return nullptr;
  }
  gateway->listener_ = ListenInBackground(gateway->server_);
  return gateway;
}

IngressGateway::~IngressGateway() {
  server_.stop();
  if (listener_.joinable()) listener_.join();
}

void IngressGateway::Handle(const httplib::Request& req, httplib::Response& res) {
  Refusal refusal;
  const std::string raw_path = req.target.substr(0, req.target.find('?'));
  std::optional<ParsedRoute> route;
  if (config_.ingress_route_mode == IngressRouteMode::kUri) {
    route = ParseUriRoute(raw_path, &refusal);
  } else {
    std::string host = req.get_header_value(kIngressToHeader);
    if (host.empty()) host = req.get_header_value(kDeprecatedIngressHeader);
    if (host.empty()) host = req.get_header_value("Host");
    if (host.empty()) {
      refusal.reason = std::string("missing header '") + kIngressToHeader + "' or 'Host'";
      return SendIngressError(res, refusal);
    }
    route = ParseHostRoute(host, &refusal);
  }
  if (!route) return SendIngressError(res, refusal);

  auto info = registry_->Get(route->sandbox_id, false);
  if (!info) return SendIngressError(res, {404, "sandbox not found: " + route->sandbox_id});
  if (info->state != "Running") {
    return SendIngressError(res, {503, std::string("sandbox not ready: ") + kNamespace + "/" + info->id +
                                           " (ready: 0/1)"});
  }
  const bool secure = !TrimSpaces(info->secure_access_token).empty();
  // A sandbox that is not secure is not checked, and a signed-looking path is read again
  // as a plain one: its last two segments become the start of the path passed on.
  if (!secure && route->uri_signed_shape) {
    route = ParseUriLegacy(raw_path, &refusal);
    if (!route) return SendIngressError(res, refusal);
  }
  if (secure) {
    if (req.has_header(kSecureAccessHeader)) {
      if (!EqualConstantTime(TrimSpaces(req.get_header_value(kSecureAccessHeader)),
                             TrimSpaces(info->secure_access_token))) {
        return SendIngressError(res, {401, "signature: secure access header mismatch"});
      }
    } else if (!route->signature.empty() && !route->expires_b36.empty()) {
      if (config_.signing_keys.empty()) {
        return SendIngressError(res, {503, "signature: ingress verifier not configured"});
      }
      const uint64_t expires = ParseBase36(route->expires_b36).value_or(0);
      const Faults faults = faults_->Get();
      const int64_t now = faults.gateway_clock_at_s > 0
                              ? faults.gateway_clock_at_s
                              : std::chrono::duration_cast<std::chrono::seconds>(
                                    (clock_.Now() + std::chrono::seconds(faults.gateway_clock_ahead_s)).time_since_epoch())
                                    .count();
      if (now < 0 || static_cast<uint64_t>(now) > expires) {
        return SendIngressError(res, {401, "signature: access expired"});
      }
      const SigningKey* key = nullptr;
      for (const SigningKey& k : config_.signing_keys) {
        if (k.id == route->signature[8]) key = &k;
      }
      if (!key) return SendIngressError(res, {401, "signature: unauthorized: unknown signed_key_id"});
      const std::string want = RouteSignature(key->secret, key->id, route->sandbox_id, route->port_number, expires);
      if (want.compare(0, 8, route->signature, 0, 8) != 0) {
        return SendIngressError(res, {401, "signature: unauthorized: signature mismatch"});
      }
    } else {
      return SendIngressError(res, {401, "signature: signature required for this sandbox"});
    }
  }

  const std::string rest = route->request_path ? *route->request_path : raw_path;
  ForwardTarget target = SandboxPortTarget(*info, config_.runtime, route->port, rest, RawQuery(req));
  target.dropped_headers = {kIngressToHeader, kSecureAccessHeader};
  target.added_headers = {{"X-Forwarded-For", req.remote_addr}};
  stats_->gateway_requests.fetch_add(1);
  if (IsWebSocketUpgrade(req)) {
    if (!TunnelUpgrade(req, target)) SendIngressError(res, {502, "cannot take the connection over"});
    return;
  }
  if (!ForwardRequest(req, res, target)) {
    // Go's ReverseProxy answers a backend it cannot reach with an empty 502.
    res.status = 502;
    return;
  }
  res.set_header("Reverse-Proxy-Server-Powerby", "OpenSandbox-ingress");
}

}  // namespace fake_opensandbox
