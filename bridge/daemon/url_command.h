#pragma once
// `abx-opensandbox-bridge url SANDBOX_ID PORT [--expires SECONDS]`: where a port of a
// sandbox is reached (the Ports service), for a person at a shell: the URL on the first
// line, then each header to send as "Name: value"; with --expires a signed URL that needs
// no header, and the line "expires_at <RFC 3339>".

#include <cstdint>
#include <optional>
#include <string>

namespace abx::daemon {

// Returns the exit code: 0; 1 with the error on stderr.
int PrintPortUrl(const std::string& socket, const std::string& sandbox_id, int port, std::optional<int64_t> expires_s);

}  // namespace abx::daemon
