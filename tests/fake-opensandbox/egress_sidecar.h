#pragma once

// The egress sidecar of one sandbox created with a networkPolicy: its /policy API
// (egress_policy.h) and /healthz on a listener of its own, 127.0.0.1:<ephemeral port>.
// The sandbox reaches it as upstream's reaches its sidecar, at 127.0.0.1:18080 of its own
// network: the fake's execd forwards /proxy/18080 to it, a real-execd sandbox has it
// published inside its network (sandbox_port_relay.h), and a Kubernetes endpoint for
// 18080 names it directly, as a pod IP would.

#include <httplib.h>

#include <atomic>
#include <memory>
#include <string>
#include <thread>

#include "tests/fake-opensandbox/egress_policy.h"

namespace fake_opensandbox {

inline constexpr int kEgressPort = 18080;
inline constexpr char kEgressAuthHeader[] = "OPENSANDBOX-EGRESS-AUTH";

struct EgressSidecarOptions {
  std::string initial_policy;  // OPENSANDBOX_EGRESS_RULES
  std::string token;           // OPENSANDBOX_EGRESS_TOKEN
  EgressRelease release;
  std::string enforcement = "dns";  // OPENSANDBOX_EGRESS_MODE
  size_t max_rules = 4096;          // OPENSANDBOX_EGRESS_MAX_RULES (0: no limit)
  std::atomic<uint64_t>* execd_token_seen = nullptr;  // counts requests carrying execd's token
};

class EgressSidecar {
 public:
  // nullptr with *error when the policy does not parse or the listener cannot bind.
  static std::unique_ptr<EgressSidecar> Start(const EgressSidecarOptions& options, std::string* error);
  // Stops serving and waits for the listener.
  ~EgressSidecar();

  int port() const { return port_; }
  EgressPolicy& policy() { return *policy_; }

 private:
  EgressSidecar() = default;

  std::unique_ptr<EgressPolicy> policy_;
  httplib::Server server_;
  std::thread listener_;
  int port_ = 0;
};

// A token as the server makes one (secrets.token_urlsafe(24)).
std::string NewEgressToken();

}  // namespace fake_opensandbox
