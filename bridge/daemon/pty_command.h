#pragma once
// `abx-opensandbox-bridge pty SANDBOX_ID [PTY_ID]`: a terminal of the sandbox in the
// calling terminal, through the running bridge (Terminals.Open and Attach): raw mode,
// keys in, output out, the window size followed. ^] detaches and leaves the terminal
// running; its shell's exit ends the command with the shell's code.

#include <string>

namespace abx::daemon {

// Opens a terminal (or attaches PTY_ID) and runs until it ends or is detached. The
// configuration comes from the environment as the shim reads it. Returns the exit code.
int AttachTerminal(const std::string& socket, const std::string& sandbox_id, std::string pty_id);

}  // namespace abx::daemon
