#include "tests/fake-opensandbox/real_execd.h"

#include <dirent.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <fstream>
#include <mutex>
#include <thread>

#include "tests/fake-opensandbox/image_catalog.h"
#include "tests/fake-opensandbox/sandbox_cgroup.h"
#include "tests/fake-opensandbox/sandbox_jail.h"
#include "tests/fake-opensandbox/egress_sidecar.h"  // kEgressPort
#include "tests/fake-opensandbox/sandbox_port_relay.h"

extern char** environ;

namespace fake_opensandbox {
namespace {

using Clock = std::chrono::steady_clock;

// The host directories below the sandbox's own files, each an overlay whose writable
// layer is the same directory of the sandbox. Debian's merged /usr makes /bin, /lib,
// /lib64 and /sbin links into /usr.
constexpr const char* kLayeredDirs[] = {"usr", "etc", "opt", "var"};
constexpr const char* kUsrLinks[] = {"bin", "lib", "lib64", "sbin"};

// What upstream's image and Docker give every process of a container.
constexpr char kContainerPath[] = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";
constexpr char kExecdInSandbox[] = "/opt/opensandbox/execd";
constexpr char kBootstrapInSandbox[] = "/opt/opensandbox/bootstrap.sh";
// The code-interpreter image's environment (its Dockerfile's ENV; API digest §2.17).
constexpr char kImageJupyterPort[] = "44771";
constexpr char kImageJupyterToken[] = "opensandboxcodeinterpreterjupyter";

std::string ReadLink(const std::string& path) {
  char buffer[256];
  ssize_t n = ::readlink(path.c_str(), buffer, sizeof buffer - 1);
  return n > 0 ? std::string(buffer, static_cast<size_t>(n)) : std::string();
}

bool WriteExecutable(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::trunc);
  out << text;
  out.close();
  return out && ::chmod(path.c_str(), 0755) == 0;
}

// The container's hostname: Docker's is the first 12 hex digits of its id.
std::string HostnameOf(const std::string& id) {
  std::string out;
  for (char c : id) {
    if (c != '-') out.push_back(c);
    if (out.size() == 12) break;
  }
  return out;
}

// Reads bubblewrap's --info-fd JSON up to its closing brace and returns "child-pid"; 0
// when the jail ended or said nothing within `timeout`.
pid_t ReadChildPid(int fd, pid_t jail, std::chrono::milliseconds timeout, std::string* error) {
  std::string text;
  const auto deadline = Clock::now() + timeout;
  while (text.find('}') == std::string::npos) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
    pollfd pfd{fd, POLLIN, 0};
    int ready = ::poll(&pfd, 1, static_cast<int>(std::max<int64_t>(0, std::min<int64_t>(left.count(), 100))));
    if (ready > 0) {
      char buffer[512];
      ssize_t n = ::read(fd, buffer, sizeof buffer);
      if (n > 0) {
        text.append(buffer, static_cast<size_t>(n));
        continue;
      }
    }
    int status = 0;
    if (::waitpid(jail, &status, WNOHANG) == jail) {
      *error = "the sandbox's jail exited before it started (status " + std::to_string(status) + ")";
      return 0;
    }
    if (Clock::now() >= deadline) {
      *error = "bubblewrap gave no child pid within " + std::to_string(timeout.count()) + " ms";
      return 0;
    }
  }
  size_t key = text.find("\"child-pid\"");
  size_t colon = key == std::string::npos ? key : text.find(':', key);
  if (colon == std::string::npos) {
    *error = "bubblewrap's info has no child-pid: " + text;
    return 0;
  }
  return static_cast<pid_t>(std::atol(text.c_str() + colon + 1));
}

// Every live process whose PID namespace is `pid_ns` ("pid:[N]").
std::vector<pid_t> ProcessesIn(const std::string& pid_ns) {
  std::vector<pid_t> out;
  DIR* proc = ::opendir("/proc");
  if (!proc) return out;
  while (dirent* entry = ::readdir(proc)) {
    char* end = nullptr;
    long pid = std::strtol(entry->d_name, &end, 10);
    if (pid <= 0 || *end != '\0') continue;
    if (ReadLink(std::string("/proc/") + entry->d_name + "/ns/pid") == pid_ns) out.push_back(static_cast<pid_t>(pid));
  }
  ::closedir(proc);
  return out;
}

}  // namespace

std::string CodeInterpreterStartScript() {
  // As upstream's scripts/code-interpreter.sh: the kernel is registered in the background
  // while Jupyter starts, and Jupyter runs in the foreground with its log in
  // /opt/code-interpreter. Debian's Python, explicitly: its ipykernel is the one installed.
  return std::string(
             "#!/bin/bash\n"
             "# The code-interpreter image's start script, as fake-opensandbox gives it\n"
             "# (tests/fake-opensandbox/real_execd.cc).\n"
             "(/usr/bin/python3 -m ipykernel install --name python --display-name Python "
             ">/opt/code-interpreter/kernel-install.log 2>&1) &\n"
             "exec /usr/bin/python3 -m notebook --ip=127.0.0.1 --port=\"${JUPYTER_PORT:-") +
         kImageJupyterPort + "}\" --allow-root --no-browser --NotebookApp.token=\"${JUPYTER_TOKEN:-" +
         kImageJupyterToken + "}\" >/opt/code-interpreter/jupyter.log 2>&1\n";
}

struct RealExecd::State {
  RealExecdOptions options;
  pid_t jail = 0;            // the jail process (our child)
  pid_t init = 0;            // the sandbox's PID 1, as the host sees it
  std::string pid_ns;        // "pid:[N]" of the sandbox
  int netns_fd = -1;
  std::unique_ptr<SandboxPortRelay> relay;
  std::unique_ptr<SandboxPortRelay> egress_relay;  // 18080 inside → the egress sidecar
  std::unique_ptr<SandboxCgroup> cgroup;  // its CPU limit, when it has one
  bool shut = false;
  // The reaper waits for the jail to end by itself. `exited` (under `mu`) says the jail has
  // ended, before it is reaped, so that Shutdown never signals a pid that is free again.
  std::thread reaper;
  std::mutex mu;
  bool exited = false, shutting = false;

  ~State() {
    if (netns_fd >= 0) ::close(netns_fd);
  }
};

RealExecd::RealExecd(std::unique_ptr<State> state) : state_(std::move(state)) {}

RealExecd::~RealExecd() { Shutdown(); }

int RealExecd::port() const { return state_->relay->port(); }

int RealExecd::Dial(int port, std::string* error) const {
  return DialInNamespace(state_->netns_fd, port, error);
}

std::unique_ptr<RealExecd> RealExecd::Start(const RealExecdOptions& options, std::string* error) {
  auto state = std::make_unique<State>();
  state->options = options;
  const std::string& root = options.host_root;
  // The tree bubblewrap binds: the layered directories, the links into /usr, and mount
  // points for what it mounts itself. A restored sandbox has most of them already.
  for (const char* dir : kLayeredDirs) ::mkdir((root + "/" + dir).c_str(), 0755);
  for (const char* link : kUsrLinks) {
    const std::string host = ReadLink(std::string("/") + link);
    if (!host.empty()) ::symlink(host.c_str(), (root + "/" + link).c_str());
  }
  for (const char* dir : {"proc", "dev", "sys"}) ::mkdir((root + "/" + dir).c_str(), 0755);
  ::mkdir(options.layers_work_dir.c_str(), 0700);

  std::string workdir = "/";
  const bool code_interpreter = !options.code_interpreter_script.empty();
  if (code_interpreter) {
    workdir = "/workspace";  // the image's WORKDIR
    ::mkdir((root + workdir).c_str(), 0755);
    ::mkdir((root + "/opt/code-interpreter").c_str(), 0755);  // its logs, whatever the tag
    const std::string script = root + options.code_interpreter_script;
    ::mkdir(script.substr(0, script.rfind('/')).c_str(), 0755);
    struct stat st;
    if (::stat(script.c_str(), &st) != 0 && !WriteExecutable(script, CodeInterpreterStartScript())) {
      *error = "cannot write " + script;
      return nullptr;
    }
  }

  std::vector<std::string> argv = {options.self_binary, kJailSubcommand};
  if (options.cpu_limit > 0) {
    std::string why;
    state->cgroup = SandboxCgroup::Create(options.sandbox_id, options.cpu_limit, &why);
    if (state->cgroup) {
      argv.insert(argv.end(), {"--cgroup-procs", state->cgroup->procs_file()});
    } else {
      std::fprintf(stderr, "fake-opensandbox: sandbox %s runs without its CPU limit of %g: %s\n",
                   options.sandbox_id.c_str(), options.cpu_limit, why.c_str());
    }
  }
  for (const char* dir : kLayeredDirs) {
    argv.push_back("--overlay");
    argv.push_back(std::string("/") + dir + ":" + root + "/" + dir + ":" + options.layers_work_dir + "/" + dir);
  }
  argv.insert(argv.end(), {"--", "bwrap", "--unshare-pid", "--unshare-ipc", "--unshare-uts", "--unshare-net",
                           "--die-with-parent", "--hostname", HostnameOf(options.sandbox_id), "--bind", root, "/",
                           "--dev", "/dev", "--proc", "/proc", "--ro-bind", "/sys", "/sys", "--ro-bind",
                           options.execd_binary, kExecdInSandbox, "--ro-bind", options.bootstrap_script,
                           kBootstrapInSandbox});
  for (const VolumeMount& mount : options.mounts) {
    argv.insert(argv.end(), {mount.read_only ? "--ro-bind" : "--bind", mount.host_dir, mount.sandbox_path});
  }
  for (const std::string& path : LeftOutProgramPaths()) argv.insert(argv.end(), {"--ro-bind", "/dev/null", path});
  std::vector<std::pair<std::string, std::string>> env = {
      {"PATH", kContainerPath}, {"HOME", "/root"}, {"HOSTNAME", HostnameOf(options.sandbox_id)}};
  // bootstrap.sh runs `$EXECD &`: the token rides in the word list, as 1.0.13 reads only
  // the flag.
  if (!options.access_token.empty()) {
    env.emplace_back("EXECD", std::string(kExecdInSandbox) + " --access-token " + options.access_token);
  }
  // execd's own default; another value goes through execd's variable for it (every release).
  if (options.grace_ms != 1000) {
    env.emplace_back("EXECD_API_GRACE_SHUTDOWN", std::to_string(options.grace_ms) + "ms");
  }
  if (code_interpreter) {
    env.emplace_back("JUPYTER_HOST", std::string("http://127.0.0.1:") + kImageJupyterPort);
    env.emplace_back("JUPYTER_PORT", kImageJupyterPort);
    env.emplace_back("JUPYTER_TOKEN", kImageJupyterToken);
  }
  for (const auto& entry : options.env) env.push_back(entry);
  argv.push_back("--clearenv");
  for (const auto& [key, value] : env) argv.insert(argv.end(), {"--setenv", key, value});
  argv.insert(argv.end(), {"--chdir", workdir, "--info-fd", "3", kBootstrapInSandbox});
  argv.insert(argv.end(), options.entrypoint.begin(), options.entrypoint.end());

  int info[2];
  if (::pipe2(info, O_CLOEXEC) != 0) {
    *error = std::string("pipe: ") + std::strerror(errno);
    return nullptr;
  }
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&actions, 1, options.log_path.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0600);
  posix_spawn_file_actions_adddup2(&actions, 1, 2);
  posix_spawn_file_actions_adddup2(&actions, info[1], 3);
  posix_spawnattr_t attributes;
  posix_spawnattr_init(&attributes);
  sigset_t none, all;
  sigemptyset(&none);
  sigfillset(&all);
  posix_spawnattr_setsigmask(&attributes, &none);
  posix_spawnattr_setsigdefault(&attributes, &all);
  posix_spawnattr_setpgroup(&attributes, 0);
  posix_spawnattr_setflags(&attributes, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETPGROUP);
  std::vector<char*> raw;
  for (std::string& word : argv) raw.push_back(word.data());
  raw.push_back(nullptr);
  int spawned = ::posix_spawn(&state->jail, options.self_binary.c_str(), &actions, &attributes, raw.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attributes);
  ::close(info[1]);
  if (spawned != 0) {
    ::close(info[0]);
    *error = "start the sandbox's jail: " + std::string(std::strerror(spawned));
    return nullptr;
  }
  std::unique_ptr<RealExecd> sandbox(new RealExecd(std::move(state)));
  State& s = *sandbox->state_;
  s.init = ReadChildPid(info[0], s.jail, std::chrono::milliseconds(10000), error);
  ::close(info[0]);
  if (s.init <= 0) {
    *error += "; the container log: " + options.log_path;
    return nullptr;
  }
  s.pid_ns = ReadLink("/proc/" + std::to_string(s.init) + "/ns/pid");
  s.netns_fd = ::open(("/proc/" + std::to_string(s.init) + "/ns/net").c_str(), O_RDONLY | O_CLOEXEC);
  if (s.pid_ns.empty() || s.netns_fd < 0) {
    *error = "the sandbox's namespaces are gone (it exited at once); the container log: " + options.log_path;
    return nullptr;
  }
  s.relay = SandboxPortRelay::Start(s.netns_fd, kExecdPort, options.connections_accepted, error);
  if (!s.relay) return nullptr;
  if (options.egress_host_port > 0) {
    s.egress_relay = SandboxPortRelay::StartInward(s.netns_fd, kEgressPort, options.egress_host_port, error);
    if (!s.egress_relay) return nullptr;
  }
  s.reaper = std::thread([&s] {
    siginfo_t ended{};
    while (::waitid(P_PID, static_cast<id_t>(s.jail), &ended, WEXITED | WNOWAIT) != 0 && errno == EINTR) {
    }
    bool report = false;
    {
      std::lock_guard<std::mutex> lock(s.mu);
      s.exited = true;
      report = !s.shutting;
    }
    int status = 0;
    while (::waitpid(s.jail, &status, 0) < 0 && errno == EINTR) {
    }
    if (report && s.options.on_exit) {
      s.options.on_exit(WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status));
    }
  });
  return sandbox;
}

void RealExecd::Freeze() {
  // Twice: a process forked while the first pass ran is caught by the second.
  for (int pass = 0; pass < 2; ++pass) {
    for (pid_t pid : ProcessesIn(state_->pid_ns)) ::kill(pid, SIGSTOP);
  }
}

void RealExecd::Thaw() {
  for (pid_t pid : ProcessesIn(state_->pid_ns)) ::kill(pid, SIGCONT);
}

void RealExecd::Shutdown() {
  State& s = *state_;
  if (s.shut) return;
  s.shut = true;
  if (s.jail > 0) {
    // The jail's death reaches bubblewrap (parent-death signal), and bubblewrap's the
    // sandbox's init (--die-with-parent), whose end ends its PID namespace.
    {
      std::lock_guard<std::mutex> lock(s.mu);
      s.shutting = true;
      if (!s.exited) ::kill(s.jail, SIGKILL);
    }
    if (s.reaper.joinable()) {
      s.reaper.join();
    } else {
      while (::waitpid(s.jail, nullptr, 0) < 0 && errno == EINTR) {
      }
    }
  }
  if (!s.pid_ns.empty()) {
    const auto deadline = Clock::now() + std::chrono::seconds(5);
    for (auto left = ProcessesIn(s.pid_ns); !left.empty() && Clock::now() < deadline;
         left = ProcessesIn(s.pid_ns)) {
      for (pid_t pid : left) ::kill(pid, SIGKILL);
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
  }
  s.relay.reset();
  s.egress_relay.reset();
  s.cgroup.reset();  // empty now
}

}  // namespace fake_opensandbox
