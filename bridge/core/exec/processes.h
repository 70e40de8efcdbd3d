#pragma once
// process.manage over execd, which has no process API of its own: the list comes from
// `ps` run in the sandbox, signals to a pid from `kill`, and an execd command id can
// only be interrupted (execd's DELETE /command: SIGTERM, then SIGKILL after 3 s).
// Commands this bridge starts carry ABX_EXEC_TAG in their environment, which is how a
// listed process is matched to its exec_id. A shell command's exec_id is the bridge's
// own (shells.h), and the bridge ends it itself.

#include <optional>
#include <string>
#include <vector>

#include "bridge/base/cancel.h"
#include "bridge/base/error.h"
#include "bridge/core/config.h"
#include "bridge/core/endpoint_cache.h"

namespace abx::core {

struct ProcessInfo {
  int pid = 0;
  std::string user;
  std::string command;
  std::string exec_id;  // empty when not started through this provider
};

class Processes {
 public:
  Processes(EndpointCache* upstream, const ProviderConfig* config) : upstream_(upstream), config_(config) {}

  Result<std::vector<ProcessInfo>> List(const std::string& sandbox_id, CancelToken* cancel);
  // Sends `signal` (a name like "TERM"/"SIGTERM" or a number) to a pid.
  Result<bool> SignalPid(const std::string& sandbox_id, int pid, const std::string& signal,
                         CancelToken* cancel);
  // Interrupts an execd command; false when it was not running.
  Result<bool> KillExec(const std::string& sandbox_id, const std::string& exec_id,
                        CancelToken* cancel);

 private:
  EndpointCache* upstream_;
  const ProviderConfig* config_;
};

// "SIGTERM", "TERM", "15" → "TERM"-style name or number text for kill -s; nullopt if unknown.
std::optional<std::string> NormalizeSignal(const std::string& signal);

}  // namespace abx::core
