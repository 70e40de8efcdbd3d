#include "bridge/core/network/network.h"

#include "bridge/base/log.h"
#include "bridge/core/egress_target.h"

namespace abx::core {
namespace {

bool EndsWith(const std::string& text, const std::string& end) {
  return text.size() >= end.size() && text.compare(text.size() - end.size(), end.size(), end) == 0;
}

Status CheckCount(size_t count, const char* field) {
  if (count == 0 || count > kMaxEgressRules) {
    return InvalidParams(field, std::string(field) + " must hold 1 to " + std::to_string(kMaxEgressRules) + " items");
  }
  return OkStatus();
}

Status CheckTarget(const std::string& target, const std::string& field) {
  if (auto problem = EgressTargetProblem(target)) {
    return InvalidParams(field, field + " " + *problem);
  }
  return OkStatus();
}

// The sidecar reads only the first MiB of a body and cuts the rest.
Status CheckBodySize(const std::string& body) {
  if (body.size() <= opensandbox::kEgressBodyLimit) return OkStatus();
  return MakeError(ErrorCode::kTooLarge, "the change takes " + std::to_string(body.size()) +
                                             " bytes, more than the egress sidecar reads (1 MiB): send it in parts");
}

}  // namespace

Status Network::CheckRules(const std::vector<opensandbox::EgressRule>& rules) {
  if (Status st = CheckCount(rules.size(), "rules"); !st.ok()) return st.error();
  for (size_t i = 0; i < rules.size(); ++i) {
    const std::string at = "rules[" + std::to_string(i) + "]";
    if (rules[i].action != "allow" && rules[i].action != "deny") {
      return InvalidParams(at + ".action", at + ".action must be \"allow\" or \"deny\"");
    }
    if (Status st = CheckTarget(rules[i].target, at + ".target"); !st.ok()) return st.error();
  }
  return CheckBodySize(opensandbox::EgressClient::PatchBody(rules));
}

Status Network::CheckTargets(const std::vector<std::string>& targets) {
  if (Status st = CheckCount(targets.size(), "targets"); !st.ok()) return st.error();
  for (size_t i = 0; i < targets.size(); ++i) {
    if (Status st = CheckTarget(targets[i], "targets[" + std::to_string(i) + "]"); !st.ok()) return st.error();
  }
  return CheckBodySize(opensandbox::EgressClient::DeleteBody(targets));
}

Result<bool> Network::ThroughExecd(const std::string& sandbox_id, const opensandbox::Endpoint& endpoint,
                                   CancelToken* cancel) {
  const std::string execd_route = "/proxy/" + std::to_string(opensandbox::kEgressPort);
  if (!config_->use_server_proxy) return EndsWith(endpoint.endpoint, execd_route);
  // The server proxy's path ends so on every runtime: its way on is the direct endpoint's.
  ABX_ASSIGN_OR_RETURN(opensandbox::Endpoint direct,
                       upstream_->Lifecycle(*config_).GetEndpoint(sandbox_id, opensandbox::kEgressPort, false, cancel));
  return EndsWith(direct.endpoint, execd_route);
}

Result<opensandbox::EgressClient> Network::Sidecar(const std::string& sandbox_id, CancelToken* cancel) {
  // A paused Docker sandbox's execd holds a request until it resumes: a change would be
  // made then, long after its caller gave up.
  ABX_ASSIGN_OR_RETURN(opensandbox::SandboxRecord record, upstream_->Lifecycle(*config_).Get(sandbox_id, cancel));
  if (record.state == "Paused" || record.state == "Pausing") {
    return MakeError(ErrorCode::kInvalidState, "sandbox " + sandbox_id + " is " + record.state +
                                                   ": its egress rules can be read and changed once it is resumed");
  }
  ABX_ASSIGN_OR_RETURN(opensandbox::Endpoint endpoint,
                       upstream_->Lifecycle(*config_).GetEndpoint(sandbox_id, opensandbox::kEgressPort,
                                                                  config_->use_server_proxy, cancel));
  // The server names the sidecar's token only for a sandbox that has one: without it,
  // nothing listens there (Docker's execd would answer 502 after a wait).
  const std::string* token = opensandbox::EgressToken(endpoint.headers);
  if (!token) {
    return MakeError(ErrorCode::kInvalidState, "sandbox " + sandbox_id +
                                                   " has no egress sidecar: rules can change only on a sandbox "
                                                   "created with network_policy");
  }
  log::RegisterSecret(*token);
  opensandbox::Headers headers = endpoint.headers;  // also through the server proxy, which drops them
  if (!config_->execd_access_token.empty()) {
    ABX_ASSIGN_OR_RETURN(bool through_execd, ThroughExecd(sandbox_id, endpoint, cancel));
    if (through_execd) headers.emplace_back("X-EXECD-ACCESS-TOKEN", config_->execd_access_token);
  }
  return opensandbox::EgressClient(upstream_->http(), ExecdBaseUrl(config_->lifecycle_url, endpoint.endpoint),
                                   std::move(headers), static_cast<int64_t>(config_->request_timeout_s * 1000));
}

Result<opensandbox::EgressPolicy> Network::Get(const std::string& sandbox_id, CancelToken* cancel) {
  ABX_ASSIGN_OR_RETURN(opensandbox::EgressClient sidecar, Sidecar(sandbox_id, cancel));
  auto policy = sidecar.Get(cancel);
  if (!policy.ok()) return policy.error().Within("sandbox " + sandbox_id);
  return policy;
}

Result<opensandbox::EgressPolicy> Network::Patch(const std::string& sandbox_id,
                                                 const std::vector<opensandbox::EgressRule>& rules, CancelToken* cancel) {
  if (Status st = CheckRules(rules); !st.ok()) return st.error();
  ABX_ASSIGN_OR_RETURN(opensandbox::EgressClient sidecar, Sidecar(sandbox_id, cancel));
  Status changed = sidecar.Patch(rules, cancel);
  if (!changed.ok()) return changed.error().Within("sandbox " + sandbox_id);
  auto policy = sidecar.Get(cancel);
  if (!policy.ok()) return policy.error().Within("sandbox " + sandbox_id + " (the change was made)");
  return policy;
}

Result<opensandbox::EgressPolicy> Network::Delete(const std::string& sandbox_id, const std::vector<std::string>& targets,
                                                  CancelToken* cancel) {
  if (Status st = CheckTargets(targets); !st.ok()) return st.error();
  ABX_ASSIGN_OR_RETURN(opensandbox::EgressClient sidecar, Sidecar(sandbox_id, cancel));
  Status changed = sidecar.Delete(targets, cancel);
  if (!changed.ok()) return changed.error().Within("sandbox " + sandbox_id);
  auto policy = sidecar.Get(cancel);
  if (!policy.ok()) return policy.error().Within("sandbox " + sandbox_id + " (the change was made)");
  return policy;
}

}  // namespace abx::core
