#pragma once

// A sandbox that runs upstream's real execd binary (`--execd-binary`), as a container of
// the Docker runtime runs it, instead of the fake's imitation (execd_server.h):
//
//   - its root is the sandbox's directory, with the host's /usr, /etc, /opt and /var below
//     it read-only and every write kept in the directory (overlays, sandbox_jail.h), so a
//     snapshot is still a copy of one directory; /tmp (sticky) and /root are its own;
//   - it is root in a user namespace of its own, with its own PID, IPC, UTS and network
//     namespaces (bubblewrap): killing the sandbox ends every process it started, and
//     execd's 0.0.0.0:44772 is reachable only through the port the fake publishes
//     (sandbox_port_relay.h), whose endpoint has the Docker bridge shape
//     127.0.0.1:<port>/proxy/44772, so calls pass through execd's own reverse proxy;
//   - a resourceLimits.cpu caps the CPU time of all its processes, as Docker's nano_cpus
//     does (sandbox_cgroup.h);
//   - execd is started by upstream's bootstrap.sh (`$EXECD &` from a non-interactive sh,
//     so it and everything it starts have SIGINT and SIGQUIT ignored), which then runs
//     the sandbox's entrypoint;
//   - a code-interpreter image has its start script, which starts a Jupyter notebook
//     server (Debian's) on 127.0.0.1:44771 as upstream's image does, and execd finds it
//     through JUPYTER_HOST and JUPYTER_TOKEN in the image's environment.
//
// The fake needs root for this (it maps the host's ids into the sandbox's namespace).

#include <sys/types.h>

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "tests/fake-opensandbox/execd_context.h"  // kExecdPort
#include "tests/fake-opensandbox/sandbox_volumes.h"

namespace fake_opensandbox {

struct RealExecdOptions {
  std::string sandbox_id;
  std::string self_binary;       // the fake's own binary (its `jail` subcommand)
  std::string execd_binary;
  std::string bootstrap_script;  // upstream's bootstrap.sh
  std::string host_root;         // the sandbox's directory: its /
  std::string layers_work_dir;   // overlayfs work directories, on host_root's file system
  std::string log_path;          // the container's stdout and stderr
  std::vector<std::string> entrypoint;
  std::vector<std::pair<std::string, std::string>> env;  // the create request's
  std::vector<VolumeMount> mounts;
  std::string access_token;      // empty: execd without one
  // The host port of the sandbox's egress sidecar (egress_sidecar.h), published inside
  // its network at 127.0.0.1:18080 as the sidecar's own port; 0: none.
  int egress_host_port = 0;
  int64_t grace_ms = 1000;       // execd's pause before it ends an event stream
  double cpu_limit = 0;          // resourceLimits.cpu in cores, as Docker's nano_cpus; 0 = none
  // The code-interpreter image's start script (image_catalog.h: where the image's tag
  // keeps it); empty for any other image. Such an image also has Jupyter's environment.
  std::string code_interpreter_script;
  std::atomic<uint64_t>* connections_accepted = nullptr;
  // Called once, on a thread of its own, when the sandbox's first process (bootstrap.sh,
  // and so the entrypoint) ends by itself, with its exit status as a container's (128 + the
  // signal when killed); never after Shutdown began. Its own thread must not be the one
  // that calls Shutdown, which waits for it.
  std::function<void(int exit_code)> on_exit;
};

class RealExecd {
 public:
  static std::unique_ptr<RealExecd> Start(const RealExecdOptions& options, std::string* error);
  // Shutdown().
  ~RealExecd();

  // The host loopback port published for execd's 44772.
  int port() const;
  // A connection to `port` inside the sandbox (the server proxy's way in); -1 with *error.
  int Dial(int port, std::string* error) const;

  // A paused container: every process of the sandbox stopped, then continued.
  void Freeze();
  void Thaw();
  // Ends every process of the sandbox and waits until none is left (and for on_exit to
  // return, when it runs); idempotent.
  void Shutdown();

 private:
  struct State;
  explicit RealExecd(std::unique_ptr<State> state);
  std::unique_ptr<State> state_;
};

// The start script the fake puts in a code-interpreter sandbox, in place of the image's.
std::string CodeInterpreterStartScript();

}  // namespace fake_opensandbox
