#pragma once
// A sandbox's egress rules at runtime (docs/epp1.md §3, sandbox.network; docs/mapping.md,
// network.policy.*): the egress sidecar the server started beside a sandbox created with a
// network policy, reached at the sandbox's endpoint for port 18080 with that endpoint's
// headers. The rules are checked here before anything is sent.

#include <string>
#include <vector>

#include "bridge/base/cancel.h"
#include "bridge/base/error.h"
#include "bridge/core/config.h"
#include "bridge/core/endpoint_cache.h"
#include "bridge/opensandbox/egress_client.h"

namespace abx::core {

// At most this many rules or targets in one change (the sidecar's default limit on all).
inline constexpr size_t kMaxEgressRules = 4096;

class Network {
 public:
  Network(EndpointCache* upstream, const ProviderConfig* config) : upstream_(upstream), config_(config) {}

  Result<opensandbox::EgressPolicy> Get(const std::string& sandbox_id, CancelToken* cancel);
  // The policy after the change, read once it is made (another change made meanwhile
  // shows too).
  Result<opensandbox::EgressPolicy> Patch(const std::string& sandbox_id,
                                          const std::vector<opensandbox::EgressRule>& rules, CancelToken* cancel);
  Result<opensandbox::EgressPolicy> Delete(const std::string& sandbox_id, const std::vector<std::string>& targets,
                                           CancelToken* cancel);

  // -32602 naming the field ("rules[2].target", "targets[0]") when a rule or a target is
  // not one the sidecar can keep, or there are none or too many.
  static Status CheckRules(const std::vector<opensandbox::EgressRule>& rules);
  static Status CheckTargets(const std::vector<std::string>& targets);

 private:
  // The sandbox's sidecar, at the endpoint of port 18080 with its headers; E8007 for a
  // paused sandbox or one without a sidecar.
  Result<opensandbox::EgressClient> Sidecar(const std::string& sandbox_id, CancelToken* cancel);
  // Whether execd's port proxy stands before the sidecar (Docker's bridge endpoint, also
  // behind the server proxy), so execd's access token must go along; a Kubernetes pod's
  // sidecar, reached directly or through the server proxy, never gets it.
  Result<bool> ThroughExecd(const std::string& sandbox_id, const opensandbox::Endpoint& endpoint, CancelToken* cancel);

  EndpointCache* upstream_;
  const ProviderConfig* config_;
};

}  // namespace abx::core
