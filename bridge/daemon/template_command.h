#pragma once
// `abx-opensandbox-bridge template build|list|delete`: templates for a person at a
// terminal, over the running bridge's typed Templates service (proto/templates.proto).
// The configuration comes from the environment, as for `snapshot` (cli_config.h).

#include <string>
#include <vector>

namespace abx::daemon {

// `args` are what follows "template"; `socket` the bridge's unless --socket names one.
// Returns the process exit code: 0 done; for a build whose command failed, that
// command's exit code; 1 another failure; 2 a usage error.
int RunTemplateCommand(std::string socket, const std::vector<std::string>& args);

}  // namespace abx::daemon
