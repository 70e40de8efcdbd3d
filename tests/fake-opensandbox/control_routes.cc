// /_fake/...: the test control endpoint, never under auth or faults.
//   GET    /_fake/stats              counters (connections, requests, live sandboxes, snapshots)
//   GET    /_fake/faults             current fault switches
//   POST   /_fake/faults             merge a JSON object of switches
//   DELETE /_fake/faults             all off
//   GET    /_fake/sandboxes/<id>     where a sandbox lives on this host

#include "rapidjson/stringbuffer.h"
#include "rapidjson/writer.h"
#include "tests/fake-opensandbox/lifecycle_context.h"
#include "tests/fake-opensandbox/lifecycle_json.h"

namespace fake_opensandbox {
void RegisterControlRoutes(httplib::Server& server, LifecycleContext* ctx) {
  server.Get("/_fake/stats", [ctx](const httplib::Request&, httplib::Response& res) {
    rapidjson::StringBuffer buffer;
    JsonWriter w(buffer);
    w.StartObject();
    w.Key("connections_accepted");
    w.Uint64(ctx->stats->connections_accepted.load());
    w.Key("live_sandboxes");
    w.Uint64(ctx->registry->LiveCount());
    w.Key("snapshots");
    w.Uint64(ctx->snapshots->Count());
    w.Key("requests");
    w.Uint64(ctx->stats->requests.load());
    w.Key("auth_rejected");
    w.Uint64(ctx->stats->auth_rejected.load());
    w.Key("execd_connections_accepted");
    w.Uint64(ctx->stats->execd_connections_accepted.load());
    w.Key("execd_requests");
    w.Uint64(ctx->stats->execd_requests.load());
    w.Key("egress_requests_with_execd_token");
    w.Uint64(ctx->stats->egress_requests_with_execd_token.load());
    w.Key("server_proxy_upstream_connections");
    w.Uint64(ctx->stats->server_proxy_upstream_connections.load());
    w.Key("gateway_requests");
    w.Uint64(ctx->stats->gateway_requests.load());
    w.Key("gateway_connections_accepted");
    w.Uint64(ctx->stats->gateway_connections_accepted.load());
    w.Key("code_runs_active");
    w.Int64(ctx->stats->code_runs_active.load());
    w.Key("kernels_alive");
    w.Int64(ctx->stats->kernels_alive.load());
    w.Key("session_runs_active");
    w.Int64(ctx->stats->session_runs_active.load());
    w.EndObject();
    SendJson(res, 200, buffer.GetString());
  });
  server.Get("/_fake/faults", [ctx](const httplib::Request&, httplib::Response& res) {
    SendJson(res, 200, ctx->faults->ToJson());
  });
  server.Post("/_fake/faults", [ctx](const httplib::Request& req, httplib::Response& res) {
    std::string error;
    if (!ctx->config.execd_binary.empty() && !FaultsAllowedWithRealExecd(req.body, &error)) {
      return SendCodeMessage(res, 400, "FAKE::INVALID_FAULTS", error);
    }
    if (!ctx->faults->Update(req.body, &error)) {
      return SendCodeMessage(res, 400, "FAKE::INVALID_FAULTS", error);
    }
    SendJson(res, 200, ctx->faults->ToJson());
  });
  server.Delete("/_fake/faults", [ctx](const httplib::Request&, httplib::Response& res) {
    ctx->faults->Reset();
    SendJson(res, 200, ctx->faults->ToJson());
  });
  server.Get("/_fake/sandboxes/([^/]+)", [ctx](const httplib::Request& req,
                                              httplib::Response& res) {
    std::string id = req.matches[1];
    auto info = ctx->registry->Get(id, false);
    if (!info) return SendSandboxNotFound(res, *ctx, id);
    rapidjson::StringBuffer buffer;
    JsonWriter w(buffer);
    w.StartObject();
    w.Key("id");
    WriteString(w, info->id);
    w.Key("root");
    WriteString(w, info->host_root);
    w.Key("execd_port");
    w.Int(info->execd_port);
    w.Key("state");
    WriteString(w, info->state);
    w.EndObject();
    SendJson(res, 200, buffer.GetString());
  });
}

}  // namespace fake_opensandbox
