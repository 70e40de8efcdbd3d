#pragma once

// What the lifecycle route handlers share, and small answer helpers.

#include <httplib.h>

#include <memory>
#include <string>

#include "tests/fake-opensandbox/fake_config.h"
#include "tests/fake-opensandbox/fault_state.h"
#include "tests/fake-opensandbox/sandbox_registry.h"
#include "tests/fake-opensandbox/server_clock.h"
#include "tests/fake-opensandbox/server_stats.h"
#include "tests/fake-opensandbox/snapshot_store.h"

namespace fake_opensandbox {

// Lifecycle routes are mounted at the root and under /v1 (docs/opensandbox.md §1.1).
inline constexpr char kV1Prefix[] = "(?:/v1)?";

struct LifecycleContext {
  FakeConfig config;
  ServerClock clock;
  SandboxRegistry* registry = nullptr;
  SnapshotStore* snapshots = nullptr;
  std::shared_ptr<FaultState> faults;
  std::shared_ptr<ServerStats> stats;
  int port = 0;  // the lifecycle listener's own port, for server-proxy endpoints
  int gateway_port = 0;  // the ingress gateway's (--ingress-gateway), for its endpoints
};

void SendJson(httplib::Response& res, int status, const std::string& body);
// {code,message} with the runtime's namespace.
void SendCodeMessage(httplib::Response& res, int status, const std::string& code,
                     const std::string& message);
// 404 DOCKER::SANDBOX_NOT_FOUND or KUBERNETES::SANDBOX_NOT_FOUND, with upstream's wording.
void SendSandboxNotFound(httplib::Response& res, const LifecycleContext& context,
                         const std::string& id);
// "DOCKER::" or "KUBERNETES::".
std::string RuntimeNamespace(const LifecycleContext& context);

void RegisterLifecycleRoutes(httplib::Server& server, LifecycleContext* context);
void RegisterEndpointRoute(httplib::Server& server, LifecycleContext* context);
void RegisterSnapshotRoutes(httplib::Server& server, LifecycleContext* context);
void RegisterServerProxyRoute(httplib::Server& server, LifecycleContext* context);
void RegisterControlRoutes(httplib::Server& server, LifecycleContext* context);

}  // namespace fake_opensandbox
