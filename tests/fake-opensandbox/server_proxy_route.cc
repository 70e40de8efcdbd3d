// The lifecycle server's reverse proxy /sandboxes/<id>/proxy/<P>/... (docs/opensandbox.md §1.10),
// reachable without an API key. It forwards to the sandbox's execd listener as
// /proxy/<P>/..., which serves execd itself for P=44772 and other ports of the host
// otherwise; answers (SSE included) are streamed through as they arrive, and a WebSocket
// upgrade is served as upstream's proxy serves it (upgrade_tunnel.h).

#include "tests/fake-opensandbox/http_forwarder.h"
#include "tests/fake-opensandbox/lifecycle_context.h"
#include "tests/fake-opensandbox/sandbox_port_target.h"
#include "tests/fake-opensandbox/upgrade_tunnel.h"

namespace fake_opensandbox {
namespace {

void HandleProxy(const httplib::Request& req, httplib::Response& res, LifecycleContext* ctx) {
  std::string id = req.matches[1];
  std::string port = req.matches[2];
  std::string upgrade = req.get_header_value("Upgrade");
  for (auto& c : upgrade) c = static_cast<char>(tolower(static_cast<unsigned char>(c)));
  const bool websocket = IsWebSocketUpgrade(req);
  if (upgrade == "websocket" && !websocket) {
    return SendCodeMessage(res, 400, "GENERAL::UNKNOWN_ERROR",
                           "WebSocket upgrade is not supported on the HTTP proxy route.");
  }
  auto info = ctx->registry->Get(id, false);
  if (!info && websocket) {  // proxy.py: an endpoint it cannot resolve is a 1011 after the upgrade
    if (!RefuseUpgrade(req, 1011)) SendSandboxNotFound(res, *ctx, id);
    return;
  }
  if (!info) return SendSandboxNotFound(res, *ctx, id);
  if (!websocket && ctx->faults->TakeProxyInternalError()) {
    // upstream's proxy reused a connection on which an event stream was still arriving and
    // read its events as the status line (seen on a real server, API digest §2.21).
    return SendCodeMessage(res, 500, "GENERAL::UNKNOWN_ERROR",
                           "An internal error occurred in the proxy: illegal status line: "
                           "bytearray(b'\"type\":\"ping\",\"text\":\"pong\",\"timestamp\":1796613183041}')");
  }
  if (websocket && ctx->faults->Get().proxy_ws_unreachable) {
    if (!RefuseUpgrade(req, 1011)) SendCodeMessage(res, 502, "GENERAL::UNKNOWN_ERROR", "unreachable");
    return;
  }

  // The rest of the path, still percent-encoded as the client sent it.
  std::string raw_path = req.target.substr(0, req.target.find('?'));
  std::string marker = "/proxy/" + port;
  size_t at = raw_path.find(marker);
  std::string rest = at == std::string::npos ? "" : raw_path.substr(at + marker.size());
  ForwardTarget target = SandboxPortTarget(*info, ctx->config.runtime, port, rest, RawQuery(req));
  target.dropped_headers = {"Authorization", "Cookie", "OPEN-SANDBOX-API-KEY"};
  target.added_headers = {{"X-Forwarded-Proto", "http"},
                          {"X-Forwarded-Host", req.get_header_value("Host")},
                          {"X-Forwarded-For", req.remote_addr}};
  target.connection_counter = &ctx->stats->server_proxy_upstream_connections;
  if (websocket ? !TunnelUpgrade(req, target) : !ForwardRequest(req, res, target)) {
    SendCodeMessage(res, 502, "GENERAL::UNKNOWN_ERROR",
                    "Could not connect to the backend sandbox " + id + ".");
  }
}

}  // namespace

void RegisterServerProxyRoute(httplib::Server& server, LifecycleContext* ctx) {
  const std::string pattern = std::string(kV1Prefix) + R"(/sandboxes/([^/]+)/proxy/(\d+)(/.*)?)";
  auto handler = [ctx](const httplib::Request& req, httplib::Response& res) {
    HandleProxy(req, res, ctx);
  };
  server.Get(pattern, handler);
  server.Post(pattern, handler);
  server.Put(pattern, handler);
  server.Patch(pattern, handler);
  server.Delete(pattern, handler);
  server.Options(pattern, handler);
}

}  // namespace fake_opensandbox
