#pragma once
// exec.shell over execd's bash sessions (docs/epp1.md §3, docs/opensandbox.md §2.15,
// docs/mapping.md "Shells"). What the contract adds to a session:
// - one command at a time per shell, in arrival order, across sessions (run_queue.h),
//   where execd would run them at once and let the last decide the saved state;
// - a command of its own: an exec_id, a timeout and a cancel that end the command and
//   every process it started while the shell lives on with its earlier state; execd's
//   own timeout and interrupt cannot (shell_script.h says how the bridge does it);
// - each output line gets its "\n" back (execd's framing drops blank lines and merges
//   stderr into stdout, which nothing can undo).

#include <string>

#include "bridge/base/cancel.h"
#include "bridge/base/error.h"
#include "bridge/core/config.h"
#include "bridge/core/endpoint_cache.h"
#include "bridge/core/exec/exec.h"

namespace abx::core {

class BridgeCore;

// A shell command's exec_id is "shell-" + its tag; execd's command ids are UUIDs.
bool IsShellExecId(const std::string& exec_id);

class Shells {
 public:
  Shells(BridgeCore* core, EndpointCache* upstream, const ProviderConfig* config)
      : core_(core), upstream_(upstream), config_(config) {}

  // A new shell starting in `cwd` (made if missing; empty: execd's directory).
  Result<std::string> Create(const std::string& sandbox_id, const std::string& cwd, CancelToken* cancel);
  // Closes the shell, ending a command that runs in it; false when there was none.
  Result<bool> Close(const std::string& sandbox_id, const std::string& shell_id, CancelToken* cancel);
  // Exec::Run for a spec with a shell_id (ValidateExec has refused what a shell cannot
  // do). Waits for the shell's earlier commands first; the timeout counts from arrival.
  Status Run(const ExecSpec& spec, CancelToken* cancel, ExecSink* sink);

 private:
  BridgeCore* core_;
  EndpointCache* upstream_;
  const ProviderConfig* config_;
};

}  // namespace abx::core
