#pragma once
// `abx-opensandbox-bridge watch SANDBOX_ID PATH [--recursive]`: Files.Watch of the running
// bridge, one line per change on stdout ("create /tmp/x", a directory with a trailing
// "/"), until ^C (exit 0) or the sandbox's end (exit 1).

#include <string>

namespace abx::daemon {

int WatchPath(const std::string& socket, const std::string& sandbox_id, const std::string& path, bool recursive);

}  // namespace abx::daemon
