#pragma once
// `abx-opensandbox-bridge sandboxes`: what the running bridge has cached, per sandbox.

#include <string>

namespace abx::daemon {

// Asks the bridge at `socket` (Bridge.ListCachedSandboxes) and prints a table, or one
// JSON object with `json`. Returns the exit code: 1 when no bridge answers.
int PrintCachedSandboxes(const std::string& socket, bool json);

}  // namespace abx::daemon
