#pragma once
// The other half of the bridge's descriptor socket (files.transfer, docs/ARCHITECTURE.md
// "Local files"): a shim connects, sends the token the bridge gave it with the open
// descriptor beside it (SCM_RIGHTS), and closes. The socket sits next to the gRPC one
// (`<socket>.fd`, mode 0600) and, like it, serves only the bridge's own user.

#include <string>

namespace abx::daemon {

// The descriptor socket's path for the bridge at `socket_path`.
std::string DescriptorSocketPathFor(const std::string& socket_path);

// Reads one hand-over from an accepted connection (non-blocking; waits up to
// `timeout_ms` for it): the token and the descriptor, owned by the caller. False, with
// `*error`, when the peer sent no descriptor, more than one, or no token in time; any
// descriptor received is then closed.
bool ReceiveDescriptor(int connection, int timeout_ms, std::string* token, int* fd, std::string* error);

}  // namespace abx::daemon
