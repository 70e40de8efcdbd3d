#include "bridge/api/grpc/network_service.h"

#include <string>
#include <vector>

#include "bridge/core/network/network.h"

namespace abx::api {
namespace {

namespace pb = abx::opensandbox::v1;

void ToProto(const opensandbox::EgressPolicy& policy, pb::NetworkPolicy* reply) {
  reply->set_mode(policy.mode);
  reply->set_enforcement(policy.enforcement);
  reply->set_default_action(policy.default_action);
  for (const opensandbox::EgressRule& rule : policy.rules) {
    pb::EgressRule* out = reply->add_rules();
    out->set_action(rule.action);
    out->set_target(rule.target);
  }
}

}  // namespace

grpc::ServerUnaryReactor* NetworkService::GetPolicy(grpc::CallbackServerContext* context,
                                                    const pb::GetNetworkPolicyRequest* request,
                                                    pb::NetworkPolicy* reply) {
  return Serve(deps_, context, "Network.GetPolicy", request->config(), [=](TypedCall& call) -> Status {
    ABX_ASSIGN_OR_RETURN(std::string id, Required(request->sandbox_id(), "sandbox_id"));
    core::Network network(call.upstream(), &call.config());
    ABX_ASSIGN_OR_RETURN(opensandbox::EgressPolicy policy, network.Get(id, call.cancel()));
    ToProto(policy, reply);
    return OkStatus();
  });
}

grpc::ServerUnaryReactor* NetworkService::PatchPolicy(grpc::CallbackServerContext* context,
                                                      const pb::PatchNetworkPolicyRequest* request,
                                                      pb::NetworkPolicy* reply) {
  return Serve(deps_, context, "Network.PatchPolicy", request->config(), [=](TypedCall& call) -> Status {
    ABX_ASSIGN_OR_RETURN(std::string id, Required(request->sandbox_id(), "sandbox_id"));
    std::vector<opensandbox::EgressRule> rules;
    for (const pb::EgressRule& rule : request->rules()) rules.push_back({rule.action(), rule.target()});
    core::Network network(call.upstream(), &call.config());
    ABX_ASSIGN_OR_RETURN(opensandbox::EgressPolicy policy, network.Patch(id, rules, call.cancel()));
    ToProto(policy, reply);
    return OkStatus();
  });
}

grpc::ServerUnaryReactor* NetworkService::DeletePolicy(grpc::CallbackServerContext* context,
                                                       const pb::DeleteNetworkPolicyRequest* request,
                                                       pb::NetworkPolicy* reply) {
  return Serve(deps_, context, "Network.DeletePolicy", request->config(), [=](TypedCall& call) -> Status {
    ABX_ASSIGN_OR_RETURN(std::string id, Required(request->sandbox_id(), "sandbox_id"));
    const std::vector<std::string> targets(request->targets().begin(), request->targets().end());
    core::Network network(call.upstream(), &call.config());
    ABX_ASSIGN_OR_RETURN(opensandbox::EgressPolicy policy, network.Delete(id, targets, call.cancel()));
    ToProto(policy, reply);
    return OkStatus();
  });
}

}  // namespace abx::api
