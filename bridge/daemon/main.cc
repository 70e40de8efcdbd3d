// abx-opensandbox-bridge: the shared local daemon of the OpenSandbox EPP/1 provider.
//
//   abx-opensandbox-bridge serve    [--socket PATH] [--idle-timeout SECONDS]
//   abx-opensandbox-bridge status   [--socket PATH] [--json]
//   abx-opensandbox-bridge stop     [--socket PATH]
//   abx-opensandbox-bridge sandboxes [--socket PATH] [--json]
//   abx-opensandbox-bridge pty SANDBOX_ID [PTY_ID] [--socket PATH]
//   abx-opensandbox-bridge --version
//
// The shim starts `serve` on demand; systemd may start it too (packaging/systemd/).

#include <algorithm>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include <grpcpp/grpcpp.h>

#include "bridge/daemon/daemon.h"
#include "bridge/daemon/pty_command.h"
#include "bridge/daemon/sandboxes_command.h"
#include "bridge/daemon/snapshot_command.h"
#include "bridge/daemon/template_command.h"
#include "bridge/daemon/watch_command.h"
#include "bridge/daemon/status_command.h"
#include "common/bridge_paths.h"
#include "common/build_id.h"
#include "common/version.h"
#include "proto/bridge.grpc.pb.h"

namespace {

namespace pb = abx::opensandbox::v1;

int Usage(FILE* out) {
  std::fprintf(out,
               "usage: abx-opensandbox-bridge serve|status|stop|sandboxes|pty|snapshot|template|watch [--socket PATH] "
               "[--idle-timeout SECONDS] [--json]\n"
               "  serve    run the bridge in the foreground (the shim starts it on demand)\n"
               "  status   print the running bridge's stats as JSON\n"
               "  stop     ask the running bridge to drain and exit\n"
               "  sandboxes  list what the running bridge has cached per sandbox "
               "(--json for tooling)\n"
               "  pty SANDBOX_ID [PTY_ID]  a terminal of the sandbox here (a new one, or PTY_ID "
               "attached); ^] detaches\n"
               "  snapshot SANDBOX_ID [--name NAME]  a snapshot of the sandbox, once Ready; prints "
               "its id\n"
               "  template build NAME [--from TEMPLATE|IMAGE] [--file LOCAL:PATH[:MODE]]... --run COMMAND...\n"
               "           build a template (output as it happens; exits with the failing command's code)\n"
               "  template list | template delete NAME\n"
               "  watch SANDBOX_ID PATH [--recursive]  changes under PATH as they happen, one line each "
               "(\"create /tmp/x\"); ^C stops\n"
               "Default socket: %s (ABX_OPENSANDBOX_BRIDGE_SOCKET overrides).\n"
               "Idle timeout: 600 s without a session (ABX_OPENSANDBOX_BRIDGE_IDLE_TIMEOUT; 0 = never).\n"
               "Sandbox lease: a command's stdin pipe and a watch host end 90 s after the bridge's last\n"
               "ping (ABX_OPENSANDBOX_BRIDGE_SANDBOX_LEASE, 3-3600 s).\n",
               abx::ResolveSocketPath(abx::kBuildId).c_str());
  return out == stderr ? 2 : 0;
}

std::unique_ptr<pb::Bridge::Stub> Connect(const std::string& socket) {
  return pb::Bridge::NewStub(
      grpc::CreateChannel("unix:" + socket, grpc::InsecureChannelCredentials()));
}

int Stop(const std::string& socket) {
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(3));
  pb::StopReply reply;
  grpc::Status status = Connect(socket)->Stop(&context, pb::StopRequest(), &reply);
  if (!status.ok()) {
    std::fprintf(stderr, "no bridge answers at %s: %s\n", socket.c_str(),
                 status.error_message().c_str());
    return 1;
  }
  std::printf("stopping: %lld session(s) still open will be allowed to finish\n",
              static_cast<long long>(reply.in_flight()));
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) return Usage(stderr);
  const std::string command = argv[1];
  if (command == "--version" || command == "version") {
    std::printf("abx-opensandbox-bridge %s (build %s)\n", abx::kProviderVersion, abx::kBuildId);
    return 0;
  }
  if (command == "--help" || command == "-h" || command == "help") return Usage(stdout);

  abx::daemon::ServeOptions options;
  options.socket_path = abx::ResolveSocketPath(abx::kBuildId);
  if (const char* idle = std::getenv("ABX_OPENSANDBOX_BRIDGE_IDLE_TIMEOUT")) {
    options.idle_timeout = std::chrono::seconds(std::atol(idle));
  }
  if (const char* lease = std::getenv("ABX_OPENSANDBOX_BRIDGE_SANDBOX_LEASE")) {
    // A number of seconds, 3 to 3600 (shorter leaves no room for a ping's round trip);
    // anything else keeps the default.
    char* end = nullptr;
    const long seconds = std::strtol(lease, &end, 10);
    if (end != lease && *end == '\0' && seconds >= 3 && seconds <= 3600) options.sandbox_lease_s = static_cast<int>(seconds);
  }
  if (command == "template") {
    return abx::daemon::RunTemplateCommand(options.socket_path, std::vector<std::string>(argv + 2, argv + argc));
  }
  bool json = false;
  bool recursive = false;
  std::string snapshot_name;
  std::vector<std::string> operands;
  for (int i = 2; i < argc; ++i) {
    const std::string arg = argv[i];
    if ((command == "pty" || command == "snapshot" || command == "watch") && !arg.empty() && arg[0] != '-') {
      operands.push_back(arg);
    } else if (arg == "--recursive" && command == "watch") {
      recursive = true;
    } else if (arg == "--name" && command == "snapshot" && i + 1 < argc) {
      snapshot_name = argv[++i];
    } else if (arg == "--json" && (command == "sandboxes" || command == "status")) {
      json = true;  // `status` prints JSON either way
    } else if (arg == "--socket" && i + 1 < argc) {
      options.socket_path = argv[++i];
    } else if (arg == "--idle-timeout" && i + 1 < argc) {
      char* end = nullptr;
      const long seconds = std::strtol(argv[++i], &end, 10);
      if (*end != '\0' || seconds < 0) {
        std::fprintf(stderr, "--idle-timeout takes a number of seconds\n");
        return 2;
      }
      options.idle_timeout = std::chrono::seconds(seconds);
    } else {
      std::fprintf(stderr, "unknown argument %s\n", arg.c_str());
      return Usage(stderr);
    }
  }
  if (command == "serve") {
    return abx::daemon::Serve(options);
  }
  if (command == "status") return abx::daemon::PrintStatus(options.socket_path);
  if (command == "stop") return Stop(options.socket_path);
  if (command == "sandboxes") return abx::daemon::PrintCachedSandboxes(options.socket_path, json);
  if (command == "pty") {
    if (operands.empty() || operands.size() > 2) return Usage(stderr);
    return abx::daemon::AttachTerminal(options.socket_path, operands[0], operands.size() > 1 ? operands[1] : "");
  }
  if (command == "watch") {
    if (operands.size() != 2) return Usage(stderr);
    return abx::daemon::WatchPath(options.socket_path, operands[0], operands[1], recursive);
  }
  if (command == "snapshot") {
    if (operands.size() != 1) return Usage(stderr);
    return abx::daemon::TakeSnapshot(options.socket_path, operands[0], snapshot_name);
  }
  return Usage(stderr);
}
