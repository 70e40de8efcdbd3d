#include "bridge/daemon/egress_command.h"

#include <cstdio>

#include <grpcpp/grpcpp.h>

#include "bridge/daemon/cli_bridge.h"
#include "bridge/daemon/cli_config.h"
#include "proto/network.grpc.pb.h"

namespace abx::daemon {
namespace {

namespace pb = abx::opensandbox::v1;

void Print(const pb::NetworkPolicy& policy) {
  std::printf("default %s, %s%s\n", policy.default_action().c_str(), policy.mode().c_str(),
              policy.enforcement().empty() ? "" : (" (" + policy.enforcement() + ")").c_str());
  for (const pb::EgressRule& rule : policy.rules()) std::printf("%s %s\n", rule.action().c_str(), rule.target().c_str());
}

}  // namespace

bool IsEgressUse(const std::vector<std::string>& words) {
  if (words.empty()) return true;
  const std::string& verb = words[0];
  if (verb == "get") return words.size() == 1;
  return (verb == "allow" || verb == "deny" || verb == "remove") && words.size() >= 2;
}

int RunEgressCommand(const std::string& socket, const std::string& sandbox_id, const std::vector<std::string>& words) {
  auto stub = pb::Network::NewStub(grpc::CreateChannel("unix:" + socket, grpc::InsecureChannelCredentials()));
  grpc::ClientContext context;
  context.set_wait_for_ready(false);
  pb::NetworkPolicy policy;
  grpc::Status status;
  const std::string verb = words.empty() ? "get" : words[0];
  if (verb == "get") {
    pb::GetNetworkPolicyRequest request;
    *request.mutable_config() = ConfigFromEnvironment();
    request.set_sandbox_id(sandbox_id);
    status = stub->GetPolicy(&context, request, &policy);
  } else if (verb == "remove") {
    pb::DeleteNetworkPolicyRequest request;
    *request.mutable_config() = ConfigFromEnvironment();
    request.set_sandbox_id(sandbox_id);
    for (size_t i = 1; i < words.size(); ++i) request.add_targets(words[i]);
    status = stub->DeletePolicy(&context, request, &policy);
  } else {
    pb::PatchNetworkPolicyRequest request;
    *request.mutable_config() = ConfigFromEnvironment();
    request.set_sandbox_id(sandbox_id);
    for (size_t i = 1; i < words.size(); ++i) {
      pb::EgressRule* rule = request.add_rules();
      rule->set_action(verb);
      rule->set_target(words[i]);
    }
    status = stub->PatchPolicy(&context, request, &policy);
  }
  if (!status.ok()) {
    std::fprintf(stderr, "egress %s failed: %s\n", verb.c_str(), CallError(status, socket).c_str());
    return 1;
  }
  Print(policy);
  return 0;
}

}  // namespace abx::daemon
