#pragma once

// Finds the bridge of this build, starting it when there is none. See the design notes
// at the top of bridge_client.cc.

#include <sys/types.h>

#include <memory>
#include <string>
#include <vector>

#include "epp-shim/bridge_messages.h"
#include "epp-shim/grpc_connection.h"
#include "epp-shim/grpc_protocol.h"
#include "epp-shim/shim_log.h"

namespace abx {

// Why the shim starts a bridge instead of using the one it found; logged on stderr.
enum class RestartReason {
  kNewVersion,    // the bridge at an explicit socket is of another build
  kStaleSocket,   // a socket file with nobody listening (its bridge died)
  kUnresponsive,  // something listens but does not answer Hello in time
  kNotRunning,    // no socket at all
};
const char* RestartReasonName(RestartReason reason);

struct BridgeClientOptions {
  std::string build_id;
  std::string socket_path;
  // True when the path came from ABX_OPENSANDBOX_BRIDGE_SOCKET: a bridge of another
  // build may legitimately live there, and the shim then moves to a path of its own.
  bool explicit_socket = false;
  std::string bridge_binary;
  // Bounded wait for a bridge we started to answer Hello.
  int start_timeout_ms = 10000;
  // Hello on a bridge that is already running.
  int hello_timeout_ms = 2000;

  // `build_id` (the shim's kBuildId, passed in by main.cc so that this library does not
  // depend on the build id: a test build can salt it), the socket from
  // ResolveSocketPath, the binary from ABX_OPENSANDBOX_BRIDGE_BIN or
  // `abx-opensandbox-bridge` beside this executable.
  static BridgeClientOptions FromEnvironment(const std::string& build_id);
};

// The gRPC method paths the shim calls (proto/bridge.proto).
inline constexpr char kHelloMethod[] = "/abx.opensandbox.v1.Bridge/Hello";
inline constexpr char kRunMethod[] = "/abx.opensandbox.v1.EppSession/Run";

// A bridge that answered Hello with our build id, and the connection it answered on
// (the session's call goes on the same one).
struct BridgeConnection {
  std::unique_ptr<GrpcConnection> transport;
  std::string socket_path;
  std::string log_path;
  HelloReplyMessage hello;
};

class BridgeClient {
 public:
  explicit BridgeClient(BridgeClientOptions options);

  // Connects to the bridge of our build, starting one if needed (bounded wait).
  // On failure `*error` is one line for a JSON-RPC message (it names the log path);
  // details such as the tail of the bridge's log have gone to stderr already.
  bool Connect(BridgeConnection* connection, std::string* error);

  // The log of the bridge this client uses (or would start).
  std::string log_path() const;

  const BridgeClientOptions& options() const { return options_; }

  // The environment a spawned bridge gets: ours without the provider's configuration
  // variables (they may hold secrets, and the bridge is shared by every session: each
  // session's configuration travels in its SessionStart). ABX_OPENSANDBOX_BRIDGE_*
  // (the bridge's own settings) stay.
  static std::vector<std::string> BridgeEnvironment(char** environment);

 private:
  enum class Outcome { kConnected, kOtherBuild, kFailed };

  Outcome ConnectAt(const std::string& socket_path, BridgeConnection* connection,
                    std::string* other_build, std::string* error);
  Outcome StartAndWait(const std::string& socket_path, RestartReason reason,
                       BridgeConnection* connection, std::string* other_build,
                       std::string* error);
  // Connects to `socket_path` and calls Hello; false (with `*status`) when the
  // connection fails, its peer is not our uid, or Hello is not answered in time.
  // `*bridge_gone`: the failure was the listener refusing, closing or resetting the
  // connection (its bridge is dead or dying), not a bridge that is slow or confused.
  bool Hello(const std::string& socket_path, int timeout_ms, BridgeConnection* connection,
             grpc_protocol::Status* status, bool* bridge_gone);

  BridgeClientOptions options_;
  std::string socket_path_;  // the current one: options_.socket_path, or the per-build one
};

}  // namespace abx
