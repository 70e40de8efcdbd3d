#pragma once
// The egress sidecar of a sandbox created with a network policy: its /policy API on port
// 18080 (docs/opensandbox.md, "Egress sidecar"), reached at the endpoint the server gives
// for that port, with that endpoint's headers (the sidecar's token among them: a secret,
// never in an error or a log).

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "bridge/base/cancel.h"
#include "bridge/base/error.h"
#include "bridge/opensandbox/http_caller.h"

namespace abx::opensandbox {

inline constexpr int kEgressPort = 18080;
inline constexpr char kEgressAuthHeader[] = "OPENSANDBOX-EGRESS-AUTH";
// The sidecar reads at most this much of a request body, and cuts the rest.
inline constexpr size_t kEgressBodyLimit = 1 << 20;

// The sidecar's token among an endpoint's headers (names compared case-insensitively);
// null when the server named none, which it does only for a sandbox with a sidecar.
const std::string* EgressToken(const Headers& headers);

struct EgressRule {
  std::string action;  // allow, deny
  std::string target;  // a host name, *.domain, an IP address or a CIDR
};

struct EgressPolicy {
  std::string mode;            // allow_all, deny_all, enforcing
  std::string enforcement;     // dns, dns+nft; "" when the sidecar does not say (1.0.0)
  std::string default_action;  // allow, deny
  std::vector<EgressRule> rules;
};

class EgressClient {
 public:
  EgressClient(HttpCaller* http, std::string base_url, Headers headers, int64_t timeout_ms)
      : http_(http), base_url_(std::move(base_url)), headers_(std::move(headers)), timeout_ms_(timeout_ms) {}

  Result<EgressPolicy> Get(const CancelToken* cancel);
  // Each rule replaces the one with the same target, or is added; the answer carries no
  // policy (Get it after).
  Status Patch(const std::vector<EgressRule>& rules, const CancelToken* cancel);
  // Targets the sidecar does not hold are ignored.
  Status Delete(const std::vector<std::string>& targets, const CancelToken* cancel);

  // The JSON bodies sent, whose size the caller checks against kEgressBodyLimit.
  static std::string PatchBody(const std::vector<EgressRule>& rules);
  static std::string DeleteBody(const std::vector<std::string>& targets);

 private:
  Result<HttpAnswer> Send(const std::string& method, std::string body, const CancelToken* cancel,
                          std::string_view what);

  HttpCaller* http_;
  std::string base_url_;
  Headers headers_;
  int64_t timeout_ms_;
};

}  // namespace abx::opensandbox
