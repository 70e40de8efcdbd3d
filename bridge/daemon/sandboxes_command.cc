#include "bridge/daemon/sandboxes_command.h"

#include <chrono>
#include <cstdio>

#include <grpcpp/grpcpp.h>

#include "bridge/base/json.h"
#include "bridge/daemon/cli_bridge.h"
#include "proto/bridge.grpc.pb.h"

namespace abx::daemon {
namespace {

namespace pb = abx::opensandbox::v1;

std::string Age(int64_t seconds) {
  if (seconds < 120) return std::to_string(seconds) + "s";
  if (seconds < 7200) return std::to_string(seconds / 60) + "m";
  return std::to_string(seconds / 3600) + "h";
}

void PrintTable(const pb::ListCachedSandboxesReply& reply) {
  if (reply.sandboxes().empty()) {
    std::printf("no sandbox cached\n");
    return;
  }
  for (const pb::CachedSandbox& sandbox : reply.sandboxes()) {
    std::printf("%s\n  server      %s\n  credential  %s\n  execd       %s\n  age         %s\n",
                sandbox.sandbox_id().c_str(), sandbox.server().c_str(),
                sandbox.credential().c_str(),
                sandbox.execd_version().empty() ? "version unknown"
                                                : sandbox.execd_version().c_str(),
                Age(sandbox.age_seconds()).c_str());
    for (const pb::CachedEndpoint& endpoint : sandbox.endpoints()) {
      std::printf("  endpoint    %s (%s, %s)\n", endpoint.url().c_str(), endpoint.access().c_str(),
                  Age(endpoint.age_seconds()).c_str());
    }
  }
}

void PrintJson(const pb::ListCachedSandboxesReply& reply) {
  using json::Quote;
  std::string out = "{\"sandboxes\":[";
  for (int i = 0; i < reply.sandboxes_size(); ++i) {
    const pb::CachedSandbox& sandbox = reply.sandboxes(i);
    out += std::string(i ? "," : "") + "{\"id\":" + Quote(sandbox.sandbox_id()) +
           ",\"server\":" + Quote(sandbox.server()) + ",\"credential\":" +
           Quote(sandbox.credential()) + ",\"execd_version\":" + Quote(sandbox.execd_version()) +
           ",\"age_s\":" + std::to_string(sandbox.age_seconds()) + ",\"endpoints\":[";
    for (int j = 0; j < sandbox.endpoints_size(); ++j) {
      const pb::CachedEndpoint& endpoint = sandbox.endpoints(j);
      out += std::string(j ? "," : "") + "{\"url\":" + Quote(endpoint.url()) + ",\"access\":" +
             Quote(endpoint.access()) + ",\"age_s\":" + std::to_string(endpoint.age_seconds()) +
             "}";
    }
    out += "]}";
  }
  out += "]}\n";
  std::fwrite(out.data(), 1, out.size(), stdout);
}

}  // namespace

int PrintCachedSandboxes(const std::string& socket, bool json) {
  auto stub = pb::Bridge::NewStub(
      grpc::CreateChannel("unix:" + socket, grpc::InsecureChannelCredentials()));
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(3));
  pb::ListCachedSandboxesReply reply;
  grpc::Status status = stub->ListCachedSandboxes(&context, pb::ListCachedSandboxesRequest(), &reply);
  if (!status.ok()) {
    std::fprintf(stderr, "%s\n", CallError(status, socket).c_str());
    return 1;
  }
  if (json) {
    PrintJson(reply);
  } else {
    PrintTable(reply);
  }
  return 0;
}

}  // namespace abx::daemon
