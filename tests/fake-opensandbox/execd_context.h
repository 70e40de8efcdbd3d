#pragma once

// What the execd route handlers of one sandbox share.

#include <cstdint>
#include <memory>
#include <string>

#include "tests/fake-opensandbox/bash_sessions.h"
#include "tests/fake-opensandbox/code_contexts.h"
#include "tests/fake-opensandbox/command_registry.h"
#include "tests/fake-opensandbox/fake_config.h"
#include "tests/fake-opensandbox/fault_state.h"
#include "tests/fake-opensandbox/pty_sessions.h"
#include "tests/fake-opensandbox/sandbox_gate.h"
#include "tests/fake-opensandbox/sandbox_paths.h"
#include "tests/fake-opensandbox/server_clock.h"
#include "tests/fake-opensandbox/server_stats.h"

namespace fake_opensandbox {

// Every execd route also answers under the Docker-bridge endpoint prefix, so
// "<host>:<port>/proxy/44772/ping" reaches /ping as it does upstream.
inline constexpr char kExecdRoutePrefix[] = "(?:/proxy/44772)?";
inline constexpr int kExecdPort = 44772;

struct ExecdContext {
  ServerClock clock;
  SandboxPaths paths;
  CommandRegistry* commands = nullptr;
  CodeContexts* code = nullptr;
  BashSessions* sessions = nullptr;
  PtySessions* ptys = nullptr;
  ExecdRelease release;  // what differs between execd releases (fake_config.h)
  // Shared: an execd listener may outlive the lifecycle server by a few connections.
  std::shared_ptr<FaultState> faults;
  std::shared_ptr<ServerStats> stats;
  std::shared_ptr<SandboxGate> gate;
  std::string staging_dir;   // upload temp files: outside the root, same filesystem
  int64_t ready_after = 0;   // failing /ping calls before execd "is up"
  int64_t sse_grace_ms = 1000;
  int egress_port = 0;  // what /proxy/18080 reaches: the egress sidecar (0: nothing)
};

}  // namespace fake_opensandbox
