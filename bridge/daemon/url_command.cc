#include "bridge/daemon/url_command.h"

#include <cstdio>

#include <grpcpp/grpcpp.h>

#include "bridge/daemon/cli_bridge.h"
#include "bridge/daemon/cli_config.h"
#include "proto/ports.grpc.pb.h"

namespace abx::daemon {

namespace pb = abx::opensandbox::v1;

int PrintPortUrl(const std::string& socket, const std::string& sandbox_id, int port, std::optional<int64_t> expires_s) {
  auto stub = pb::Ports::NewStub(grpc::CreateChannel("unix:" + socket, grpc::InsecureChannelCredentials()));
  grpc::ClientContext context;
  pb::PortUrlRequest request;
  *request.mutable_config() = ConfigFromEnvironment();
  request.set_sandbox_id(sandbox_id);
  request.set_port(port);
  if (expires_s) request.set_expires(*expires_s);
  pb::PortUrlReply reply;
  const grpc::Status status = stub->Url(&context, request, &reply);
  if (!status.ok()) {
    std::fprintf(stderr, "url failed: %s\n", CallError(status, socket).c_str());
    return 1;
  }
  std::printf("%s\n", reply.url().c_str());
  for (const auto& [name, value] : reply.headers()) std::printf("%s: %s\n", name.c_str(), value.c_str());
  if (!reply.expires_at().empty()) std::printf("expires_at %s\n", reply.expires_at().c_str());
  return 0;
}

}  // namespace abx::daemon
