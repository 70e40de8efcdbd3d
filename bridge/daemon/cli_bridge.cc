#include "bridge/daemon/cli_bridge.h"

#include <limits.h>
#include <unistd.h>

#include "epp-shim/bridge_client.h"
#include "epp-shim/shim_log.h"

namespace abx::daemon {
namespace {

// This binary, which is the bridge the CLI starts.
std::string OwnPath() {
  char path[PATH_MAX];
  const ssize_t n = readlink("/proc/self/exe", path, sizeof path - 1);
  return n > 0 ? std::string(path, static_cast<size_t>(n)) : std::string();
}

}  // namespace

bool BridgeAddress::Reach(const char* command, std::string* answering) const {
  // The client writes each step and each failure on stderr itself, a failure with the
  // tail of the bridge's log where there is one: its lines carry the command.
  static std::string program;
  program = std::string("abx-opensandbox-bridge ") + command;
  SetShimLogProgram(program.c_str());
  BridgeClientOptions options = BridgeClientOptions::FromEnvironment(build_id);
  options.socket_path = socket;
  options.explicit_socket = options.explicit_socket || explicit_socket;
  const std::string self = OwnPath();
  if (!self.empty()) options.bridge_binary = self;
  BridgeClient client(options);
  BridgeConnection connection;
  std::string why;  // written already
  if (!client.Connect(&connection, &why)) return false;
  *answering = connection.socket_path;
  return true;
}

std::string CallError(const grpc::Status& status, const std::string& socket) {
  const std::string& message = status.error_message();
  // The bridge's errors begin with their EPP code (its E8002 for an unreachable server is
  // UNAVAILABLE too, and may quote curl's "Connection reset"): they pass as they are.
  if (message.rfind("E8", 0) == 0) return message;
  // gRPC's own words for a socket nobody answers on.
  const bool no_bridge = status.error_code() == grpc::StatusCode::UNAVAILABLE &&
                         (message.find("failed to connect to all addresses") != std::string::npos ||
                          message.find("connections to all backends failing") != std::string::npos ||
                          message == "Socket closed");
  if (no_bridge) {
    return "no bridge answers at " + socket +
           " (the shim starts one on demand, as pty, snapshot, template and watch do; or run "
           "`abx-opensandbox-bridge serve --socket " + socket + "`)";
  }
  if (status.error_code() == grpc::StatusCode::DEADLINE_EXCEEDED && message == "Deadline Exceeded") {
    return "the bridge at " + socket + " did not answer in time";
  }
  return message.empty() ? "the bridge refused the call" : message;
}

}  // namespace abx::daemon
