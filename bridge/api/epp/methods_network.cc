// The sandbox.network extension: network.policy.get, .patch and .delete.
#include "bridge/api/epp/methods.h"
#include "bridge/api/epp/params.h"
#include "bridge/api/epp/session.h"
#include "bridge/base/json.h"
#include "bridge/core/network/network.h"

namespace abx::epp {
namespace {

std::string PolicyJson(const opensandbox::EgressPolicy& policy) {
  std::string out = "{\"mode\":" + json::Quote(policy.mode);
  if (!policy.enforcement.empty()) out += ",\"enforcement\":" + json::Quote(policy.enforcement);
  out += ",\"default_action\":" + json::Quote(policy.default_action) + ",\"rules\":[";
  for (size_t i = 0; i < policy.rules.size(); ++i) {
    if (i > 0) out += ",";
    out += "{\"action\":" + json::Quote(policy.rules[i].action) + ",\"target\":" + json::Quote(policy.rules[i].target) + "}";
  }
  return out + "]}";
}

// `rules`: [{"action","target"}], each member a string (their values are the core's to check).
Result<std::vector<opensandbox::EgressRule>> Rules(const Params& p) {
  const rapidjson::Value* raw = p.Raw("rules");
  if (!raw) return InvalidParams("rules", "rules is required");
  if (!raw->IsArray()) return InvalidParams("rules", "rules must be an array of {\"action\",\"target\"}");
  std::vector<opensandbox::EgressRule> rules;
  for (rapidjson::SizeType i = 0; i < raw->Size(); ++i) {
    const std::string at = "rules[" + std::to_string(i) + "]";
    const rapidjson::Value& item = (*raw)[i];
    if (!item.IsObject()) return InvalidParams(at, at + " must be an object {\"action\",\"target\"}");
    opensandbox::EgressRule rule;
    for (const char* field : {"action", "target"}) {
      auto value = json::GetString(item, field);
      if (!value) return InvalidParams(at + "." + field, at + "." + field + " must be a string");
      (std::string(field) == "action" ? rule.action : rule.target) = *value;
    }
    rules.push_back(std::move(rule));
  }
  return rules;
}

core::Network NetworkOf(Request& req) { return core::Network(req.session().upstream().get(), &req.session().config()); }

}  // namespace

Result<std::string> NetworkPolicyGet(Request& req) {
  Params p(req.params());
  ABX_ASSIGN_OR_RETURN(std::string id, SandboxId(p));
  ABX_ASSIGN_OR_RETURN(opensandbox::EgressPolicy policy, NetworkOf(req).Get(id, &req.cancel()));
  return PolicyJson(policy);
}

Result<std::string> NetworkPolicyPatch(Request& req) {
  Params p(req.params());
  ABX_ASSIGN_OR_RETURN(std::string id, SandboxId(p));
  ABX_ASSIGN_OR_RETURN(std::vector<opensandbox::EgressRule> rules, Rules(p));
  ABX_ASSIGN_OR_RETURN(opensandbox::EgressPolicy policy, NetworkOf(req).Patch(id, rules, &req.cancel()));
  return PolicyJson(policy);
}

Result<std::string> NetworkPolicyDelete(Request& req) {
  Params p(req.params());
  ABX_ASSIGN_OR_RETURN(std::string id, SandboxId(p));
  ABX_ASSIGN_OR_RETURN(auto targets, p.StringArray("targets"));
  if (!targets) return InvalidParams("targets", "targets is required");
  ABX_ASSIGN_OR_RETURN(opensandbox::EgressPolicy policy, NetworkOf(req).Delete(id, *targets, &req.cancel()));
  return PolicyJson(policy);
}

}  // namespace abx::epp
