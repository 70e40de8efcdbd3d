#pragma once
// The bridge a command of the CLI talks to, and what its failures say.

#include <string>

#include <grpcpp/grpcpp.h>

namespace abx::daemon {

// Where a command finds its bridge: the socket it was given (--socket, or
// ABX_OPENSANDBOX_BRIDGE_SOCKET) or this build's default.
struct BridgeAddress {
  std::string build_id;
  std::string socket;
  bool explicit_socket = false;
  // A bridge of this build answering at `socket`, started when none does exactly as the
  // shim starts one (epp-shim/bridge_client.h: the same socket rules, the same peer and
  // build checks, the same detached `serve`), this very binary being the bridge. True
  // with the socket it answers on in `*answering` (a per-build path beside an explicit
  // `socket` that holds another build's bridge). Its steps, and on failure why, are
  // written once on stderr, each line prefixed by "abx-opensandbox-bridge <command>: ".
  bool Reach(const char* command, std::string* answering) const;
};

// A failed call to the bridge at `socket` as a sentence: a bridge that is not there or
// does not answer is said so, with the command that starts one; the bridge's own errors
// are sentences already and pass as they are.
std::string CallError(const grpc::Status& status, const std::string& socket);

}  // namespace abx::daemon
