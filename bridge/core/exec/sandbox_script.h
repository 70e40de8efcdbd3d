#pragma once
// A short bash script run in the sandbox through execd's /command, its output collected:
// the probes and chores the bridge does there itself (process.list's /proc walk, a
// signal, ending a shell command's processes). Not for a user's command (exec.h).

#include <string>

#include "bridge/base/cancel.h"
#include "bridge/base/error.h"
#include "bridge/opensandbox/execd_client.h"

namespace abx::core {

// Runs `script` (execd's own timeout 30 s) and returns its stdout, each line with its
// "\n"; *exit_code gets its exit code. A stream that ends without one is E8002.
Result<std::string> RunSandboxScript(opensandbox::ExecdClient& execd, const std::string& script, int* exit_code,
                                     const CancelToken* cancel);

}  // namespace abx::core
