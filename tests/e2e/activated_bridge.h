#pragma once

// Starts `abx-opensandbox-bridge serve` as a socket activator (systemd) would: the test
// binds and listens on the Unix socket itself, and the bridge inherits it as fd 3, with
// LISTEN_FDS=1 and LISTEN_PID set in the child after fork to the child's own pid.

#include <sys/types.h>

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "tests/e2e/process.h"

namespace abx::e2e {

class ActivatedBridge {
 public:
  // Binds `socket_path` (mode 0600), then forks and execs `bridge_binary serve --socket
  // socket_path` with `env` plus the LISTEN_* variables, stdout and stderr appended to
  // `log_path`. The test's own copy of the listening socket is closed afterwards.
  static std::unique_ptr<ActivatedBridge> Start(const std::string& bridge_binary,
                                                const std::string& socket_path,
                                                const std::vector<std::string>& env,
                                                const std::string& log_path,
                                                std::string* error);
  // SIGTERM, up to 5 s to drain, then SIGKILL; always reaped.
  ~ActivatedBridge();
  ActivatedBridge(const ActivatedBridge&) = delete;
  ActivatedBridge& operator=(const ActivatedBridge&) = delete;

  pid_t pid() const { return pid_; }
  // Waits for the bridge to end; nullopt when it still runs after `timeout`.
  std::optional<ExitStatus> WaitExit(Millis timeout);

 private:
  explicit ActivatedBridge(pid_t pid) : pid_(pid) {}
  pid_t pid_;
  std::optional<ExitStatus> status_;
};

}  // namespace abx::e2e
