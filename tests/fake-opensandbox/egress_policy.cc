#include "tests/fake-opensandbox/egress_policy.h"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <map>
#include <set>
#include <tuple>

#include <rapidjson/document.h>

#include "tests/fake-opensandbox/go_json.h"

namespace fake_opensandbox {
namespace {

constexpr size_t kBodyLimit = 1 << 20;  // io.LimitReader: the rest is cut, not refused

std::string Lower(std::string text) {
  for (char& c : text) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return text;
}

std::string Trim(const std::string& text) {
  const size_t begin = text.find_first_not_of(" \t\r\n\v\f");
  if (begin == std::string::npos) return "";
  const size_t end = text.find_last_not_of(" \t\r\n\v\f");
  return text.substr(begin, end - begin + 1);
}

EgressAnswer Text(int status, const std::string& message) {  // Go's http.Error
  return EgressAnswer{status, "text/plain; charset=utf-8", message + "\n", {{"X-Content-Type-Options", "nosniff"}}};
}

EgressAnswer Json(std::string body) {  // writeJSON: json.NewEncoder(w).Encode
  return EgressAnswer{200, "application/json", std::move(body) + "\n", {}};
}

// Go's json.Unmarshal words for a value of the wrong kind.
const char* GoKind(const rapidjson::Value& v) {
  if (v.IsObject()) return "object";
  if (v.IsArray()) return "array";
  if (v.IsString()) return "string";
  if (v.IsBool()) return "bool";
  if (v.IsNumber()) return "number";
  return "null";
}

// json.Unmarshal's error for text that is not JSON, as far as the fake tells them apart.
std::string SyntaxError(const std::string& body, const rapidjson::Document& doc) {
  if (doc.GetErrorOffset() >= body.size()) return "unexpected end of JSON input";
  char c = body[doc.GetErrorOffset()];
  return std::string("invalid character '") + c + "' looking for beginning of value";
}

// Reads a []EgressRule; "" when it is one, else what json.Unmarshal says.
std::string ReadRules(const rapidjson::Value& v, std::vector<EgressPolicy::Rule>* rules) {
  if (v.IsNull()) return "";
  if (!v.IsArray()) return std::string("json: cannot unmarshal ") + GoKind(v) + " into Go value of type []policy.EgressRule";
  for (const auto& item : v.GetArray()) {
    EgressPolicy::Rule rule;
    if (item.IsNull()) {
      rules->push_back(rule);
      continue;
    }
    if (!item.IsObject()) {
      return std::string("json: cannot unmarshal ") + GoKind(item) + " into Go value of type policy.EgressRule";
    }
    for (const char* field : {"action", "target"}) {
      auto it = item.FindMember(field);
      if (it == item.MemberEnd() || it->value.IsNull()) continue;
      if (!it->value.IsString()) {
        return std::string("json: cannot unmarshal ") + GoKind(it->value) + " into Go struct field EgressRule." +
               field + " of type string";
      }
      (std::string(field) == "action" ? rule.action : rule.target) = it->value.GetString();
    }
    rules->push_back(rule);
  }
  return "";
}

// policy.normalize: an action lower-cased (empty: deny), a target trimmed.
std::string Normalize(std::vector<EgressPolicy::Rule>* rules) {
  for (auto& rule : *rules) {
    rule.action = Lower(Trim(rule.action));
    if (rule.action.empty()) rule.action = "deny";
    if (rule.action != "allow" && rule.action != "deny") return "unsupported action \"" + rule.action + "\"";
    rule.target = Trim(rule.target);
    if (rule.target.empty()) return "egress target cannot be empty";
  }
  return "";
}

}  // namespace

std::optional<EgressRelease> EgressReleaseFor(const std::string& version) {
  int major = 0, minor = 0, patch = 0;
  char end = 0;
  if (std::sscanf(version.c_str(), "%d.%d.%d%c", &major, &minor, &patch, &end) != 3) return std::nullopt;
  auto at_least = [&](int a, int b, int c) {
    return std::make_tuple(major, minor, patch) >= std::make_tuple(a, b, c);
  };
  EgressRelease release;
  release.get_has_enforcement = at_least(1, 0, 1);
  release.patch = at_least(1, 0, 2);
  release.rule_limit = at_least(1, 0, 4);
  release.remove = at_least(1, 0, 13);
  return release;
}

EgressPolicy::EgressPolicy(const std::string& initial, std::string token, EgressRelease release,
                           std::string enforcement, size_t max_rules, std::string* error)
    : token_(std::move(token)), release_(release), enforcement_(std::move(enforcement)), max_rules_(max_rules) {
  if (Trim(initial).empty()) return;
  EgressAnswer replaced = Replace(initial);
  if (replaced.status != 200) *error = "OPENSANDBOX_EGRESS_RULES: " + replaced.body;
}

EgressAnswer EgressPolicy::Handle(const std::string& method, const std::optional<std::string>& auth,
                                  const std::string& full_body) {
  if (!Authorized(auth)) return Text(401, "unauthorized");
  const std::string body = Trim(full_body.substr(0, kBodyLimit));
  if (method == "GET") return Get();
  if (method == "POST" || method == "PUT") return Replace(body);
  if (method == "PATCH" && release_.patch) return Patch(body);
  if (method == "DELETE" && release_.remove) return Remove(body);
  EgressAnswer refused = Text(405, "method not allowed");
  refused.headers.emplace_back("Allow", release_.remove  ? "GET, POST, PUT, PATCH, DELETE"
                                        : release_.patch ? "GET, POST, PUT, PATCH"
                                                         : "GET, POST, PUT");
  return refused;
}

std::vector<EgressPolicy::Rule> EgressPolicy::rules() {
  std::lock_guard<std::mutex> lock(mu_);
  return rules_;
}

bool EgressPolicy::Authorized(const std::optional<std::string>& auth) const {
  if (token_.empty()) return true;
  if (!auth || auth->empty() || auth->size() != token_.size()) return false;
  unsigned char differ = 0;  // subtle.ConstantTimeCompare
  for (size_t i = 0; i < token_.size(); ++i) differ |= static_cast<unsigned char>((*auth)[i] ^ token_[i]);
  return differ == 0;
}

std::string EgressPolicy::Mode() const {
  if (rules_.empty()) return default_action_ == "allow" ? "allow_all" : "deny_all";
  return "enforcing";
}

std::string EgressPolicy::StatusJson(const std::string& reason) const {
  GoJsonWriter w;
  w.StartObject().Key("status").String("ok").Key("mode").String(Mode()).Key("enforcementMode").String(enforcement_);
  if (!reason.empty()) w.Key("reason").String(reason);
  w.EndObject();
  return w.Take();
}

EgressAnswer EgressPolicy::Get() {
  std::lock_guard<std::mutex> lock(mu_);
  GoJsonWriter policy;
  policy.StartObject().Key("egress");
  if (rules_null_) {
    policy.StartArray().EndArray();
  } else {
    policy.StartArray();
    for (const Rule& rule : rules_) policy.StartObject().Key("action").String(rule.action).Key("target").String(rule.target).EndObject();
    policy.EndArray();
  }
  policy.Key("defaultAction").String(default_action_).EndObject();
  std::string policy_json = policy.Take();
  if (rules_null_) policy_json.replace(policy_json.find("[]"), 2, "null");
  std::string out = "{";
  auto member = [&](const char* key, const std::string& value) {
    if (out.size() > 1) out += ",";
    AppendGoJsonString(&out, key);
    out += ":";
    AppendGoJsonString(&out, value);
  };
  if (release_.patch) {
    member("status", "ok");
    member("mode", Mode());
    member("enforcementMode", enforcement_);
  } else {  // a map then, which Go writes with its keys sorted
    if (release_.get_has_enforcement) member("enforcementMode", enforcement_);
    member("mode", Mode());
  }
  return Json(out + ",\"policy\":" + policy_json + "}");
}

EgressAnswer EgressPolicy::Replace(const std::string& body) {
  std::vector<Rule> rules;
  bool null_rules = true;
  std::string default_action = "deny";
  if (!body.empty()) {
    rapidjson::Document doc;
    doc.Parse(body.c_str(), body.size());
    if (doc.HasParseError()) return Text(400, "invalid policy: " + SyntaxError(body, doc));
    if (!doc.IsNull() && !doc.IsObject()) {
      return Text(400, std::string("invalid policy: json: cannot unmarshal ") + GoKind(doc) +
                           " into Go value of type policy.NetworkPolicy");
    }
    if (doc.IsObject()) {
      if (auto it = doc.FindMember("egress"); it != doc.MemberEnd() && !it->value.IsNull()) {
        std::string bad = ReadRules(it->value, &rules);
        if (!bad.empty()) return Text(400, "invalid policy: " + bad);
        null_rules = false;
      }
      if (auto it = doc.FindMember("defaultAction"); it != doc.MemberEnd() && it->value.IsString()) {
        default_action = Lower(Trim(it->value.GetString()));
        if (default_action.empty()) default_action = "deny";
        if (default_action != "allow" && default_action != "deny") {
          return Text(400, "invalid policy: unsupported defaultAction \"" + default_action + "\"");
        }
      }
    }
    std::string bad = Normalize(&rules);
    if (!bad.empty()) return Text(400, "invalid policy: " + bad);
    if (release_.rule_limit && max_rules_ > 0 && rules.size() > max_rules_) {
      return Text(413, "egress rule total count " + std::to_string(rules.size()) + " exceeds limit " +
                           std::to_string(max_rules_));
    }
  }
  std::lock_guard<std::mutex> lock(mu_);
  rules_ = std::move(rules);
  rules_null_ = null_rules;
  default_action_ = default_action;
  if (body.empty()) return Json(R"({"status":"ok","mode":"deny_all","reason":"policy reset to default deny-all"})");
  return Json(StatusJson(""));
}

EgressAnswer EgressPolicy::Patch(const std::string& body) {
  if (body.empty()) return Text(400, "empty body");
  rapidjson::Document doc;
  doc.Parse(body.c_str(), body.size());
  if (doc.HasParseError()) return Text(400, "invalid patch rules: " + SyntaxError(body, doc));
  std::vector<Rule> patch;
  std::string bad = ReadRules(doc, &patch);
  if (!bad.empty()) return Text(400, "invalid patch rules: " + bad);
  if (patch.empty()) return Text(400, "invalid patch rules: empty array");
  std::lock_guard<std::mutex> lock(mu_);
  // The patch's rules first, in its order (the first of a target wins), then the rules
  // kept whose target it did not name. The key is the target lower-cased, whatever it is.
  std::vector<Rule> merged;
  std::set<std::string> seen;
  for (const Rule& rule : patch) {
    if (seen.insert(Lower(rule.target)).second) merged.push_back(rule);
  }
  for (const Rule& rule : rules_) {
    if (seen.insert(Lower(rule.target)).second) merged.push_back(rule);
  }
  bad = Normalize(&merged);
  if (!bad.empty()) return Text(400, "invalid merged policy: " + bad);
  if (release_.rule_limit && max_rules_ > 0 && merged.size() > max_rules_) {
    return Text(413, "egress rule total count " + std::to_string(merged.size()) + " exceeds limit " +
                         std::to_string(max_rules_));
  }
  rules_ = std::move(merged);
  rules_null_ = false;
  return Json(StatusJson(""));
}

EgressAnswer EgressPolicy::Remove(const std::string& body) {
  if (body.empty()) return Text(400, "empty body");
  rapidjson::Document doc;
  doc.Parse(body.c_str(), body.size());
  if (doc.HasParseError()) return Text(400, "invalid delete targets: " + SyntaxError(body, doc));
  std::set<std::string> targets;
  if (!doc.IsNull()) {
    if (!doc.IsArray()) {
      return Text(400, std::string("invalid delete targets: json: cannot unmarshal ") + GoKind(doc) +
                           " into Go value of type []string");
    }
    if (doc.Empty()) return Text(400, "invalid delete targets: empty array");
    for (const auto& t : doc.GetArray()) {
      if (t.IsNull()) continue;
      if (!t.IsString()) {
        return Text(400, std::string("invalid delete targets: json: cannot unmarshal ") + GoKind(t) +
                             " into Go value of type string");
      }
      std::string key = Lower(Trim(t.GetString()));
      if (!key.empty()) targets.insert(key);
    }
  } else {
    return Text(400, "invalid delete targets: empty array");
  }
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<Rule> kept;
  for (const Rule& rule : rules_) {
    if (!targets.count(Lower(rule.target))) kept.push_back(rule);
  }
  if (kept.size() == rules_.size()) return Json(StatusJson("no matching targets found"));
  rules_ = std::move(kept);
  rules_null_ = false;
  return Json(StatusJson(""));
}

}  // namespace fake_opensandbox
