#include "tests/fake-opensandbox/sandbox_port_target.h"

#include "tests/fake-opensandbox/egress_sidecar.h"

namespace fake_opensandbox {

ForwardTarget SandboxPortTarget(const SandboxInfo& info, Runtime runtime, const std::string& port, const std::string& rest,
                                const std::string& raw_query) {
  ForwardTarget target;
  target.port = info.execd_port;
  target.path_and_query = "/proxy/" + port + rest + raw_query;
  const std::string direct = (rest.empty() ? "/" : rest) + raw_query;
  if (info.real_execd && port == "44772") target.path_and_query = direct;
  if (port == std::to_string(kEgressPort) && info.egress_port > 0 && runtime == Runtime::kKubernetes) {
    target.port = info.egress_port;
    target.path_and_query = direct;
  }
  return target;
}

}  // namespace fake_opensandbox
