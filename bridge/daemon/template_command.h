#pragma once
// `abx-opensandbox-bridge template build|list|delete`: templates for a person at a
// terminal, over the running bridge's typed Templates service (proto/templates.proto).
// The configuration comes from the environment, as for `snapshot` (cli_config.h).

#include <cstdio>
#include <string>
#include <vector>

#include "bridge/daemon/cli_bridge.h"

namespace abx::daemon {

// `args` are what follows "template" (a --socket among them is the caller's, in
// `bridge`), which is reached, and started if need be, once the command is known to be
// well formed. Returns the process exit code: 0 done; for a build whose command failed,
// that command's exit code; 1 another failure; 2 a usage error.
int RunTemplateCommand(const BridgeAddress& bridge, const std::vector<std::string>& args);

// The usage of `template`, for --help.
void PrintTemplateUsage(FILE* out);

}  // namespace abx::daemon
