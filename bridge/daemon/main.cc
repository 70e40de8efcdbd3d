// abx-opensandbox-bridge: the shared local daemon of the OpenSandbox EPP/1 provider.
//
//   abx-opensandbox-bridge serve    [--socket PATH] [--idle-timeout SECONDS]
//   abx-opensandbox-bridge status   [--socket PATH] [--json]
//   abx-opensandbox-bridge stop     [--socket PATH]
//   abx-opensandbox-bridge sandboxes [--socket PATH] [--json]
//   abx-opensandbox-bridge pty SANDBOX_ID [PTY_ID] [--socket PATH]
//   abx-opensandbox-bridge snapshot SANDBOX_ID [--name NAME] [--socket PATH]
//   abx-opensandbox-bridge template build|list|delete … [--socket PATH]
//   abx-opensandbox-bridge watch SANDBOX_ID PATH [--recursive] [--socket PATH]
//   abx-opensandbox-bridge egress SANDBOX_ID [get | allow|deny|remove TARGET...] [--socket PATH]
//   abx-opensandbox-bridge url SANDBOX_ID PORT [--expires SECONDS] [--socket PATH]
//   abx-opensandbox-bridge --version
//
// The shim starts `serve` on demand; systemd may start it too (packaging/systemd/). The
// commands that work in a sandbox (pty, snapshot, template, watch, egress, url) start one as the shim
// does when none runs (cli_bridge.h); those about the running bridge (status, stop,
// sandboxes) say so when there is none. `--help` on the program or a command prints its
// usage and exits 0; a wrong use prints it on stderr and exits 2.

#include <algorithm>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <grpcpp/grpcpp.h>

#include "bridge/daemon/cli_bridge.h"
#include "bridge/daemon/daemon.h"
#include "bridge/daemon/egress_command.h"
#include "bridge/daemon/pty_command.h"
#include "bridge/daemon/sandboxes_command.h"
#include "bridge/daemon/snapshot_command.h"
#include "bridge/daemon/template_command.h"
#include "bridge/daemon/url_command.h"
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
               "usage: abx-opensandbox-bridge serve|status|stop|sandboxes|pty|snapshot|template|watch|egress|url [--socket PATH] "
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
               "  egress SANDBOX_ID [get | allow|deny|remove TARGET...]  the sandbox's egress rules, read or\n"
               "           changed (a sandbox created with network_policy)\n"
               "  url SANDBOX_ID PORT [--expires SECONDS]  where a port of the sandbox is reached, and\n"
               "           the headers to send; with --expires a signed URL that needs none\n"
               "Default socket: %s (ABX_OPENSANDBOX_BRIDGE_SOCKET overrides).\n"
               "Idle timeout: 600 s without a session (ABX_OPENSANDBOX_BRIDGE_IDLE_TIMEOUT; 0 = never).\n"
               "Sandbox lease: a command's stdin pipe and a watch host end 90 s after the bridge's last\n"
               "ping (ABX_OPENSANDBOX_BRIDGE_SANDBOX_LEASE, 3-3600 s).\n",
               abx::ResolveSocketPath(abx::kBuildId).c_str());
  return out == stderr ? 2 : 0;
}

// Each command's usage: what `COMMAND --help` prints on stdout (exit 0), and a wrong use
// of it on stderr (exit 2).
const std::map<std::string, const char*>& CommandUsage() {
  static const auto* usage = new std::map<std::string, const char*>{
      {"serve",
       "usage: abx-opensandbox-bridge serve [--socket PATH] [--idle-timeout SECONDS]\n"
       "  runs the bridge in the foreground (the shim starts one on demand)\n"},
      {"status",
       "usage: abx-opensandbox-bridge status [--socket PATH] [--json]\n"
       "  prints the running bridge's stats as JSON\n"},
      {"stop",
       "usage: abx-opensandbox-bridge stop [--socket PATH]\n"
       "  asks the running bridge to drain and exit\n"},
      {"sandboxes",
       "usage: abx-opensandbox-bridge sandboxes [--socket PATH] [--json]\n"
       "  lists what the running bridge has cached per sandbox (--json for tooling)\n"},
      {"pty",
       "usage: abx-opensandbox-bridge pty SANDBOX_ID [PTY_ID] [--socket PATH]\n"
       "  a terminal of the sandbox here: a new one, or PTY_ID attached; ^] detaches.\n"
       "  Starts a bridge when none runs.\n"},
      {"snapshot",
       "usage: abx-opensandbox-bridge snapshot SANDBOX_ID [--name NAME] [--socket PATH]\n"
       "  a snapshot of the sandbox, once Ready; prints its id. Starts a bridge when none runs.\n"},
      {"egress",
       "usage: abx-opensandbox-bridge egress SANDBOX_ID [get | allow TARGET... | deny TARGET... | remove TARGET...]\n"
       "                                     [--socket PATH]\n"
       "  the egress rules of a sandbox created with network_policy: printed (get, the default), a\n"
       "  rule per TARGET that allows or denies it (replacing one with the same target), or the\n"
       "  TARGETs' rules removed. A TARGET is a host name, *.domain, an IP address or a CIDR.\n"
       "  Prints the rules after, one a line, under the default. Starts a bridge when none runs.\n"},
      {"url",
       "usage: abx-opensandbox-bridge url SANDBOX_ID PORT [--expires SECONDS] [--socket PATH]\n"
       "  where PORT of the sandbox is reached from here: the URL, then each header to send\n"
       "  (\"Name: value\"). With --expires (60 to 604800), a signed URL that needs no header and\n"
       "  stops working then, and its expires_at (a Kubernetes server behind its ingress gateway\n"
       "  with signing keys, and a sandbox created with secure_access). Starts a bridge when none runs.\n"},
      {"watch",
       "usage: abx-opensandbox-bridge watch SANDBOX_ID PATH [--recursive] [--socket PATH]\n"
       "  changes under PATH as they happen, one line each (\"create /tmp/x\"); ^C stops.\n"
       "  Starts a bridge when none runs.\n"},
  };
  return *usage;
}

// Flags whose next argument is their value (a --name of "-h" is a name), never read as a
// flag of its own.
bool TakesValue(const std::string& arg) {
  return arg == "--socket" || arg == "--name" || arg == "--idle-timeout" || arg == "--from" || arg == "--file" ||
         arg == "--run" || arg == "--timeout" || arg == "--expires";
}

int CommandUsageOf(const std::string& command, FILE* out) {
  if (command == "template") {
    abx::daemon::PrintTemplateUsage(out);
    std::fprintf(out, "  Starts a bridge when none runs.\n");
  } else {
    std::fprintf(out, "%s", CommandUsage().at(command));
  }
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
    std::fprintf(stderr, "%s\n", abx::daemon::CallError(status, socket).c_str());
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
  if (command != "template" && CommandUsage().count(command) == 0) {
    std::fprintf(stderr, "unknown command %s\n", command.c_str());
    return Usage(stderr);
  }

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
  abx::daemon::BridgeAddress bridge;
  bridge.build_id = abx::kBuildId;
  for (int i = 2; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--help" || arg == "-h") return CommandUsageOf(command, stdout);
    if (TakesValue(arg) && i + 1 < argc) {
      if (arg == "--socket") {
        options.socket_path = argv[i + 1];
        bridge.explicit_socket = true;
      }
      ++i;
    }
  }
  bridge.socket = options.socket_path;
  if (command == "template") {
    return abx::daemon::RunTemplateCommand(bridge, std::vector<std::string>(argv + 2, argv + argc));
  }
  bool json = false;
  bool recursive = false;
  std::string snapshot_name;
  std::optional<int64_t> expires;
  std::vector<std::string> operands;
  for (int i = 2; i < argc; ++i) {
    const std::string arg = argv[i];
    if ((command == "pty" || command == "snapshot" || command == "watch" || command == "egress" ||
         command == "url") && !arg.empty() &&
        arg[0] != '-') {
      operands.push_back(arg);
    } else if (arg == "--expires" && command == "url" && i + 1 < argc) {
      char* end = nullptr;
      const char* text = argv[++i];
      const long long seconds = std::strtoll(text, &end, 10);
      if (end == text || *end != '\0') {
        std::fprintf(stderr, "--expires takes a number of seconds\n");
        return CommandUsageOf(command, stderr);
      }
      expires = seconds;
    } else if (arg == "--recursive" && command == "watch") {
      recursive = true;
    } else if (arg == "--name" && command == "snapshot" && i + 1 < argc) {
      snapshot_name = argv[++i];
    } else if (arg == "--json" && (command == "sandboxes" || command == "status")) {
      json = true;  // `status` prints JSON either way
    } else if (arg == "--socket" && i + 1 < argc) {
      ++i;  // read above
    } else if (arg == "--idle-timeout" && command == "serve" && i + 1 < argc) {
      char* end = nullptr;
      const long seconds = std::strtol(argv[++i], &end, 10);
      if (*end != '\0' || seconds < 0) {
        std::fprintf(stderr, "--idle-timeout takes a number of seconds\n");
        return CommandUsageOf(command, stderr);
      }
      options.idle_timeout = std::chrono::seconds(seconds);
    } else {
      std::fprintf(stderr, "unknown argument %s\n", arg.c_str());
      return CommandUsageOf(command, stderr);
    }
  }
  if (command == "serve") return abx::daemon::Serve(options);
  if (command == "status") return abx::daemon::PrintStatus(options.socket_path);
  if (command == "stop") return Stop(options.socket_path);
  if (command == "sandboxes") return abx::daemon::PrintCachedSandboxes(options.socket_path, json);
  if (command == "egress") {
    const std::vector<std::string> words(operands.size() > 1 ? operands.begin() + 1 : operands.end(), operands.end());
    if (operands.empty() || !abx::daemon::IsEgressUse(words)) {
      std::fprintf(stderr, "egress takes a sandbox id, then get, or allow, deny or remove with targets\n");
      return CommandUsageOf(command, stderr);
    }
    std::string socket;
    if (!bridge.Reach(command.c_str(), &socket)) return 1;
    return abx::daemon::RunEgressCommand(socket, operands[0], words);
  }
  if (command == "url") {
    char* end = nullptr;
    const long port = operands.size() == 2 ? std::strtol(operands[1].c_str(), &end, 10) : 0;
    if (operands.size() != 2 || *end != '\0' || port < 1 || port > 65535) {
      std::fprintf(stderr, "url takes a sandbox id and a port (1 to 65535)\n");
      return CommandUsageOf(command, stderr);
    }
    std::string socket;
    if (!bridge.Reach(command.c_str(), &socket)) return 1;
    return abx::daemon::PrintPortUrl(socket, operands[0], static_cast<int>(port), expires);
  }
  const size_t wanted_min = command == "watch" ? 2 : 1;
  const size_t wanted_max = command == "snapshot" ? 1 : 2;
  if (operands.size() < wanted_min || operands.size() > wanted_max) {
    std::fprintf(stderr, "%s takes %s\n", command.c_str(),
                 command == "pty" ? "a sandbox id and, to attach, a terminal id"
                 : command == "watch" ? "a sandbox id and a path" : "a sandbox id");
    return CommandUsageOf(command, stderr);
  }
  std::string socket;
  if (!bridge.Reach(command.c_str(), &socket)) return 1;
  if (command == "pty") return abx::daemon::AttachTerminal(socket, operands[0], operands.size() > 1 ? operands[1] : "");
  if (command == "watch") return abx::daemon::WatchPath(socket, operands[0], operands[1], recursive);
  return abx::daemon::TakeSnapshot(socket, operands[0], snapshot_name);
}
