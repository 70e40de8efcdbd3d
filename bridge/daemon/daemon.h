#pragma once
// `abx-opensandbox-bridge serve`: lock, listen, serve, drain, exit.

#include <chrono>
#include <string>

namespace abx::daemon {

struct ServeOptions {
  std::string socket_path;
  // Exit after this long with no session open (0: never). Documented default: 10 min.
  std::chrono::seconds idle_timeout{600};
  // How long stdin pipes and watch hosts outlive the bridge's pings
  // (BridgeCore::set_sandbox_lease_seconds); 0: the core's default.
  int sandbox_lease_s = 0;
  // How long SIGTERM waits for open sessions to finish before the bridge exits anyway.
  std::chrono::seconds drain_grace{30};
};

// Runs the daemon until it is stopped, drained or idle. Returns the process exit code:
// 0 also when another bridge already holds the lock (the racer that lost steps aside).
int Serve(const ServeOptions& options);

}  // namespace abx::daemon
