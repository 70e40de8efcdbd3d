#pragma once

// The rules an egress sidecar keeps, and its /policy API over them, as upstream's egress
// component (components/egress: policy_server.go, policy_utils.go, pkg/policy) keeps and
// serves them: authorisation first (a constant-time compare of OPENSANDBOX-EGRESS-AUTH),
// then GET, POST/PUT (replace), PATCH (merge by target) and DELETE (remove by target),
// each with upstream's status codes and exact bodies (Go's http.Error text, or JSON as
// its encoder writes it). Releases differ in which methods exist (docs/opensandbox.md,
// "Egress sidecar").
//
// The fake keeps and serves rules; it does not filter the sandbox's traffic (upstream
// does that with a DNS proxy and nftables inside the sandbox's network).

#include <cstddef>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace fake_opensandbox {

struct EgressRelease {
  bool get_has_enforcement = true;  // 1.0.1: GET names the enforcement mode
  bool patch = true;                // 1.0.2: PATCH, and GET's answer gains "status"
  bool rule_limit = true;           // 1.0.4: more than max_rules rules is a 413
  bool remove = true;               // 1.0.13: DELETE
};
// The release `version` plays ("1.1.0", "1.0.1"…); nullopt when it is not a version.
std::optional<EgressRelease> EgressReleaseFor(const std::string& version);

struct EgressAnswer {
  int status = 200;
  std::string content_type;
  std::string body;
  std::vector<std::pair<std::string, std::string>> headers;
};

class EgressPolicy {
 public:
  struct Rule {
    std::string action, target;
  };

  // `initial` is the policy as the server hands it to the sidecar (OPENSANDBOX_EGRESS_RULES:
  // the create request's networkPolicy, `egress` always present); empty: default deny.
  // `token` empty: no authorisation. `*error` when `initial` does not parse (upstream's
  // sidecar then exits).
  EgressPolicy(const std::string& initial, std::string token, EgressRelease release, std::string enforcement,
               size_t max_rules, std::string* error);

  // One request to /policy. `auth` is the OPENSANDBOX-EGRESS-AUTH header (nullopt: absent).
  EgressAnswer Handle(const std::string& method, const std::optional<std::string>& auth, const std::string& body);

  // What GET shows, for the fake's own tests.
  std::vector<Rule> rules();

 private:
  EgressAnswer Get();
  EgressAnswer Replace(const std::string& body);
  EgressAnswer Patch(const std::string& body);
  EgressAnswer Remove(const std::string& body);
  bool Authorized(const std::optional<std::string>& auth) const;
  std::string Mode() const;
  std::string StatusJson(const std::string& reason) const;

  const std::string token_;
  const EgressRelease release_;
  const std::string enforcement_;
  const size_t max_rules_;
  std::mutex mu_;
  bool rules_null_ = true;  // `egress` is null (the default policy, or a reset)
  std::vector<Rule> rules_;
  std::string default_action_ = "deny";
};

}  // namespace fake_opensandbox
