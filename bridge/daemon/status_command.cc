#include "bridge/daemon/status_command.h"

#include <chrono>
#include <cstdio>
#include <cstdint>

#include <grpcpp/grpcpp.h>

#include "bridge/base/json.h"
#include "bridge/daemon/cli_bridge.h"
#include "proto/bridge.grpc.pb.h"

namespace abx::daemon {

namespace pb = abx::opensandbox::v1;

std::string StatusJson(const std::string& socket, const pb::StatsReply& reply) {
  std::string out = "{\"socket\":";
  json::AppendQuoted(&out, socket);
  auto number = [&out](const char* name, int64_t value) {
    out += ",\"";
    out += name;
    out += "\":" + std::to_string(value);
  };
  number("pid", reply.pid());
  out += ",\"build_id\":";
  json::AppendQuoted(&out, reply.build_id());
  out += ",\"version\":";
  json::AppendQuoted(&out, reply.version());
  number("uptime_s", reply.uptime_seconds());
  number("sessions_active", reply.sessions_active());
  number("sessions_total", reply.sessions_total());
  number("requests_total", reply.requests_total());
  number("upstream_requests", reply.upstream_requests());
  number("upstream_connections", reply.upstream_connections());
  number("cached_sandboxes", reply.cached_sandboxes());
  number("streams_active", reply.streams_active());
  number("peak_rss_bytes", reply.peak_rss_bytes());
  out += std::string(",\"draining\":") + (reply.draining() ? "true" : "false");
  number("early_writes_used", reply.early_writes_used());
  number("early_writes_dropped", reply.early_writes_dropped());
  // The warm pools, a failing refill's error with them.
  out += ",\"pools\":[";
  for (int i = 0; i < reply.pools_size(); ++i) {
    const pb::PoolState& p = reply.pools(i);
    out += i ? ",{\"template\":" : "{\"template\":";
    json::AppendQuoted(&out, p.template_());
    out += ",\"server\":";
    json::AppendQuoted(&out, p.server());
    out += ",\"credential\":";
    json::AppendQuoted(&out, p.credential());
    number("target", p.target());
    number("ready", p.ready());
    number("creating", p.creating());
    number("taken", p.taken());
    out += ",\"last_error\":";
    if (p.last_error().empty()) {
      out += "null";
    } else {
      json::AppendQuoted(&out, p.last_error());
    }
    out += "}";
  }
  return out + "]}";
}

int PrintStatus(const std::string& socket) {
  auto stub = pb::Bridge::NewStub(
      grpc::CreateChannel("unix:" + socket, grpc::InsecureChannelCredentials()));
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(3));
  pb::StatsReply reply;
  grpc::Status status = stub->Stats(&context, pb::StatsRequest(), &reply);
  if (!status.ok()) {
    std::fprintf(stderr, "%s\n", CallError(status, socket).c_str());
    return 1;
  }
  std::printf("%s\n", StatusJson(socket, reply).c_str());
  return 0;
}

}  // namespace abx::daemon
