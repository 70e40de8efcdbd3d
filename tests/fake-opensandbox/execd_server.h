#pragma once

// One sandbox's execd: its own HTTP listener on 127.0.0.1:<ephemeral port>, started
// when the sandbox is created and stopped when it is deleted or expires. It serves the
// execd API at the root and under /proxy/44772/ (the Docker-bridge endpoint shape), and
// /proxy/<P>/... to other ports of this host.

#include <httplib.h>

#include <cstdint>
#include <memory>
#include <string>
#include <thread>

#include "tests/fake-opensandbox/command_registry.h"
#include "tests/fake-opensandbox/execd_context.h"
#include "tests/fake-opensandbox/fault_state.h"
#include "tests/fake-opensandbox/sandbox_gate.h"
#include "tests/fake-opensandbox/server_clock.h"
#include "tests/fake-opensandbox/server_stats.h"

namespace fake_opensandbox {

struct ExecdServerOptions {
  ServerClock clock;
  ExecdRelease release;           // the execd release it plays (fake_config.h)
  std::string access_token;       // empty: no X-EXECD-ACCESS-TOKEN check
  int64_t ready_after = 2;
  int64_t sse_grace_ms = 1000;
  int keep_alive_timeout_s = 120;
  std::shared_ptr<FaultState> faults;
  std::shared_ptr<ServerStats> stats;
  std::string log_dir;            // background command logs
  std::string staging_dir;        // upload temp files
  JupyterState jupyter = JupyterState::kNone;  // what the image has for /code
  std::vector<VolumeMount> mounts;  // the sandbox's volumes (sandbox_volumes.h)
  int egress_port = 0;  // the sandbox's egress sidecar (egress_sidecar.h): its 18080
};

class ExecdServer {
 public:
  // Binds and starts serving; nullptr with *error on failure.
  static std::unique_ptr<ExecdServer> Start(const ExecdServerOptions& options,
                                            const std::string& host_root,
                                            std::shared_ptr<SandboxGate> gate,
                                            std::string* error);
  ~ExecdServer();

  int port() const;
  CommandRegistry& commands();

  // The sandbox is gone: kill its processes and stop accepting. Returns at once; the
  // listener is destroyed in the background once its open connections have ended.
  void Shutdown();

 private:
  struct State;
  explicit ExecdServer(std::shared_ptr<State> state) : state_(std::move(state)) {}
  std::shared_ptr<State> state_;
};

}  // namespace fake_opensandbox
