#include "tests/fake-opensandbox/child_process.h"

#include <fcntl.h>
#include <grp.h>
#include <pwd.h>
#include <signal.h>
#include <pthread.h>
#include <sched.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <climits>
#include <cerrno>
#include <cstring>
#include <map>
#include <optional>
#include <vector>

#include "tests/fake-opensandbox/image_catalog.h"

extern char** environ;

namespace fake_opensandbox {
namespace {

const char* ShellPath() {
  static const char* path = [] {
    for (const char* candidate : {"/usr/bin/bash", "/bin/bash"}) {
      if (access(candidate, X_OK) == 0) return candidate;
    }
    return "/bin/sh";  // execd falls back to sh when there is no bash
  }();
  return path;
}

// Host directories a chrooted command needs; bound read-only except /dev and /proc.
constexpr const char* kSystemDirs[] = {"/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32",
                                       "/usr", "/etc", "/opt", "/dev", "/proc", "/sys"};

// What the child does to enter the sandbox root, worked out by the parent: the child
// shares the parent's memory until it execs (see SpawnShell) and so must not allocate.
struct RootStep {
  std::string target;  // root + dir
  std::string dir;
  std::string link;    // non-empty: copy this symlink instead of binding
  bool writable = false;
  bool volume = false;  // its mount point exists already (made at create, never here)
};
struct RootPlan {
  bool enabled = false;
  std::string root;
  std::string cwd;
  std::vector<RootStep> steps;
};

// A private mount namespace in which `root` gets the host's system directories
// (symlinks such as merged-/usr's /bin -> usr/bin are copied as links), then chroot.
RootPlan PlanSandboxRoot(const std::string& root, const std::string& cwd,
                         const std::vector<VolumeMount>& mounts) {
  RootPlan plan;
  if (root.empty() || geteuid() != 0) return plan;
  plan.enabled = true;
  plan.root = root;
  plan.cwd = cwd.empty() ? "/" : cwd;
  for (const char* dir : kSystemDirs) {
    struct stat st;
    if (lstat(dir, &st) != 0) continue;
    RootStep step;
    step.target = root + dir;
    step.dir = dir;
    if (S_ISLNK(st.st_mode)) {
      char link[PATH_MAX];
      const ssize_t n = readlink(dir, link, sizeof link - 1);
      if (n <= 0) return RootPlan();  // as before: unconfined rather than half-done
      step.link.assign(link, static_cast<size_t>(n));
    } else if (!S_ISDIR(st.st_mode)) {
      continue;
    }
    step.writable = std::strcmp(dir, "/dev") == 0 || std::strcmp(dir, "/proc") == 0;
    plan.steps.push_back(std::move(step));
  }
  // Outer mounts first, so that one inside another is bound on top of it.
  std::vector<const VolumeMount*> ordered;
  for (const VolumeMount& mount : mounts) ordered.push_back(&mount);
  std::stable_sort(ordered.begin(), ordered.end(), [](const VolumeMount* a, const VolumeMount* b) {
    return a->sandbox_path.size() < b->sandbox_path.size();
  });
  for (const VolumeMount* mount : ordered) {
    RootStep step;
    step.target = root + mount->sandbox_path;
    step.dir = mount->host_dir;
    step.writable = !mount->read_only;
    step.volume = true;
    plan.steps.push_back(std::move(step));
  }
  // A program no image has (--without-program): /dev/null over the host's copy, which is
  // then no executable at all.
  for (const std::string& path : LeftOutProgramPaths()) {
    RootStep step;
    step.target = root + path;
    step.dir = "/dev/null";
    step.writable = true;
    step.volume = true;  // the file is there already: nothing to make
    plan.steps.push_back(std::move(step));
  }
  return plan;
}

// In the child, before exec. False, with nothing half-done visible to anyone else, when
// the kernel or our privileges refuse: the caller then runs the command unconfined.
bool EnterSandboxRoot(const RootPlan& plan) {
  if (!plan.enabled) return false;
  if (unshare(CLONE_NEWNS) != 0) return false;
  if (mount("none", "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0) return false;
  for (const RootStep& step : plan.steps) {
    if (!step.link.empty()) {
      struct stat existing;
      if (lstat(step.target.c_str(), &existing) != 0 &&
          symlink(step.link.c_str(), step.target.c_str()) != 0) {
        return false;
      }
      continue;
    }
    if (!step.volume && mkdir(step.target.c_str(), 0755) != 0 && errno != EEXIST) return false;
    if (mount(step.dir.c_str(), step.target.c_str(), nullptr, MS_BIND | MS_REC, nullptr) != 0) {
      return false;
    }
    if (!step.writable && mount(nullptr, step.target.c_str(), nullptr,
                                MS_REMOUNT | MS_BIND | MS_RDONLY | MS_REC, nullptr) != 0) {
      return false;
    }
  }
  if (chroot(plan.root.c_str()) != 0) return false;
  return chdir(plan.cwd.c_str()) == 0;
}

std::string LowerFirst(std::string text) {
  if (!text.empty()) text[0] = static_cast<char>(tolower(static_cast<unsigned char>(text[0])));
  return text;
}

// Go's signal names (syscall.Signal.String) for the ones a command is likely to die of.
const char* GoSignalName(int sig) {
  switch (sig) {
    case SIGHUP: return "hangup";
    case SIGINT: return "interrupt";
    case SIGQUIT: return "quit";
    case SIGILL: return "illegal instruction";
    case SIGTRAP: return "trace/breakpoint trap";
    case SIGABRT: return "aborted";
    case SIGBUS: return "bus error";
    case SIGFPE: return "floating point exception";
    case SIGKILL: return "killed";
    case SIGUSR1: return "user defined signal 1";
    case SIGSEGV: return "segmentation fault";
    case SIGUSR2: return "user defined signal 2";
    case SIGPIPE: return "broken pipe";
    case SIGALRM: return "alarm clock";
    case SIGTERM: return "terminated";
    default: return nullptr;
  }
}

void SetNonBlocking(int fd) {
  int flags = fcntl(fd, F_GETFL);
  if (flags >= 0) fcntl(fd, F_SETFL, flags | O_NONBLOCK);
}

// Larger pipes mean fewer wake-ups when a command floods its output.
void GrowPipe(int fd) {
#ifdef F_SETPIPE_SZ
  fcntl(fd, F_SETPIPE_SZ, 1 << 20);
#endif
}

int OpenPidfd(pid_t pid) {
#ifdef SYS_pidfd_open
  long fd = syscall(SYS_pidfd_open, pid, 0);
  if (fd >= 0) {
    fcntl(static_cast<int>(fd), F_SETFD, FD_CLOEXEC);
    return static_cast<int>(fd);
  }
#endif
  return -1;
}

// Everything the child needs, prepared by the parent.
struct ChildArgs {
  const SpawnOptions* options;
  const RootPlan* root;
  const char* const* argv;
  char* const* envp;
  const std::vector<gid_t>* groups;
  std::optional<gid_t> gid;
  int out_fd, err_fd, report_fd;
};

// Child side. Reports (stage, errno) on `report_fd` and exits if a step fails. It runs
// in the parent's memory (CLONE_VM) until execve: no allocation, no locks, and raw
// set*id system calls, because glibc's wrappers would signal the parent's threads to
// change their credentials too.
int ChildExec(void* raw) {
  const ChildArgs& a = *static_cast<const ChildArgs*>(raw);
  const int report_fd = a.report_fd;
  auto fail = [report_fd](int stage) {
    int payload[2] = {stage, errno};
    ssize_t ignored = write(report_fd, payload, sizeof(payload));
    (void)ignored;
    _exit(127);
  };
  if (a.options->terminal_fd >= 0) {
    if (setsid() < 0 || ioctl(a.options->terminal_fd, TIOCSCTTY, 0) != 0) fail(1);
  } else {
    setpgid(0, 0);
  }
  for (int sig : {SIGPIPE, SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGCHLD}) signal(sig, SIG_DFL);
  if (a.options->sigint_ignored) signal(SIGINT, SIG_IGN);
  sigset_t all;
  sigemptyset(&all);
  sigprocmask(SIG_SETMASK, &all, nullptr);

  if (a.options->terminal_fd >= 0) {
    if (dup2(a.options->terminal_fd, 0) < 0) fail(1);
  } else if (a.options->stdin_fd >= 0) {
    if (dup2(a.options->stdin_fd, 0) < 0) fail(1);
  } else {
    int devnull = open("/dev/null", O_RDONLY);
    if (devnull < 0 || dup2(devnull, 0) < 0) fail(1);
  }
  if (dup2(a.out_fd, 1) < 0 || dup2(a.err_fd, 2) < 0) fail(1);
  if (!EnterSandboxRoot(*a.root) && chdir(a.options->host_cwd.c_str()) != 0) fail(2);
  if (a.options->uid) {
    if (syscall(SYS_setgroups, a.groups->size(), a.groups->data()) != 0) fail(3);
    if (syscall(SYS_setgid, *a.gid) != 0) fail(3);
    if (syscall(SYS_setuid, *a.options->uid) != 0) fail(3);
  }
  // Close everything else but the report pipe (CLOEXEC closes it at exec).
  long max_fd = sysconf(_SC_OPEN_MAX);
  if (max_fd < 0 || max_fd > 65536) max_fd = 65536;
#ifdef SYS_close_range
  if (syscall(SYS_close_range, 3u, ~0u, 4u /* CLOSE_RANGE_CLOEXEC */) != 0)
#endif
  {
    for (int fd = 3; fd < max_fd; ++fd) {
      if (fd != report_fd) close(fd);
    }
  }
  execve(ShellPath(), const_cast<char* const*>(a.argv), a.envp);
  fail(4);
  _exit(127);
}

}  // namespace

bool UnderBoundSystemDir(const std::string& sandbox_path) {
  for (const char* dir : kSystemDirs) {
    const size_t n = std::strlen(dir);
    if (sandbox_path.compare(0, n, dir) == 0 && (sandbox_path.size() == n || sandbox_path[n] == '/')) return true;
  }
  return false;
}

std::vector<std::string> MergedEnvironment(
    const std::vector<std::pair<std::string, std::string>>& overrides) {
  std::map<std::string, std::string> merged;
  std::vector<std::string> order;
  for (char** entry = environ; entry && *entry; ++entry) {
    std::string item = *entry;
    size_t eq = item.find('=');
    if (eq == std::string::npos) continue;
    std::string key = item.substr(0, eq);
    if (!merged.count(key)) order.push_back(key);
    merged[key] = item.substr(eq + 1);
  }
  for (const auto& [key, value] : overrides) {
    if (!merged.count(key)) order.push_back(key);
    merged[key] = value;
  }
  std::vector<std::string> out;
  out.reserve(order.size());
  for (const auto& key : order) out.push_back(key + "=" + merged[key]);
  return out;
}

bool SpawnShell(const SpawnOptions& options, SpawnedProcess* process, std::string* error) {
  const char* shell = ShellPath();
  const char* name = strrchr(shell, '/') + 1;
  const char* plain[] = {name, "-c", options.command.c_str(), nullptr};
  const char* interactive[] = {name, "--norc", "--noprofile", nullptr};
  const char* interactive_command[] = {name, "--norc", "--noprofile", "-c", options.command.c_str(), nullptr};
  const char* const* argv = !options.interactive       ? plain
                            : options.command.empty() ? interactive
                                                      : interactive_command;
  std::vector<char*> envp;
  envp.reserve(options.env.size() + 1);
  for (const auto& entry : options.env) envp.push_back(const_cast<char*>(entry.c_str()));
  envp.push_back(nullptr);

  // The primary group and supplementary groups come from the passwd entry of the uid.
  std::vector<gid_t> groups;
  std::optional<gid_t> gid;
  if (options.uid) {
    gid = options.gid ? *options.gid : *options.uid;
    struct passwd pw_storage;
    struct passwd* pw = nullptr;
    std::vector<char> buf(16384);
    if (getpwuid_r(*options.uid, &pw_storage, buf.data(), buf.size(), &pw) == 0 && pw) {
      if (!options.gid) gid = pw->pw_gid;
      int count = 64;
      groups.resize(count);
      if (getgrouplist(pw->pw_name, *gid, groups.data(), &count) < 0) {
        groups.resize(count);
        getgrouplist(pw->pw_name, *gid, groups.data(), &count);
      }
      groups.resize(count);
    } else {
      groups.push_back(*gid);
    }
  }

  int out_pipe[2] = {-1, -1}, err_pipe[2] = {-1, -1}, report[2] = {-1, -1};
  auto close_all = [&] {
    for (int fd : {out_pipe[0], out_pipe[1], err_pipe[0], err_pipe[1], report[0], report[1]}) {
      if (fd >= 0) close(fd);
    }
  };
  if (options.combined_output_fd < 0 && options.terminal_fd < 0) {
    if (pipe2(out_pipe, O_CLOEXEC) != 0 || pipe2(err_pipe, O_CLOEXEC) != 0) {
      *error = std::string("pipe: ") + strerror(errno);
      close_all();
      return false;
    }
  }
  if (pipe2(report, O_CLOEXEC) != 0) {
    *error = std::string("pipe: ") + strerror(errno);
    close_all();
    return false;
  }
  int child_out = options.terminal_fd >= 0         ? options.terminal_fd
                  : options.combined_output_fd >= 0 ? options.combined_output_fd
                                                    : out_pipe[1];
  int child_err = options.terminal_fd >= 0         ? options.terminal_fd
                  : options.combined_output_fd >= 0 ? options.combined_output_fd
                  : options.stderr_fd >= 0          ? options.stderr_fd
                                                    : err_pipe[1];

  // clone(CLONE_VM | CLONE_VFORK), as posix_spawn does, instead of fork(): the fake runs
  // a thread per connection, and fork copied its page tables for every command and then
  // paid copy-on-write faults and TLB shootdowns in both processes until the exec. Under
  // 64 concurrent sessions that was most of the fake's CPU per command. The parent
  // waits (CLONE_VFORK) until the child has exec'd or exited.
  const RootPlan root = PlanSandboxRoot(options.chroot_dir, options.chroot_cwd, options.mounts);
  ChildArgs child_args{&options, &root, argv, envp.data(), &groups,
                       gid, child_out, child_err, report[1]};
  constexpr size_t kChildStackBytes = 256 << 10;
  std::vector<char> child_stack(kChildStackBytes);
  // No handler of ours may run in the child while it shares our memory: block every
  // signal around the clone; the child unblocks once its dispositions are defaults.
  sigset_t all, saved;
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, &saved);
#if defined(__SANITIZE_THREAD__)
  // Under ThreadSanitizer (--config=tsan) a plain fork: TSan's runtime intercepts the
  // child's libc calls, and in a child that shares the fake's memory those change the
  // runtime's own state (the fake died at its first command: "starting new threads
  // after multi-threaded fork"). TSan handles fork itself; the parent still waits for
  // the exec through the report pipe below.
  pid_t pid = fork();
  if (pid == 0) ChildExec(&child_args);  // never returns
#else
  pid_t pid = clone(ChildExec, child_stack.data() + child_stack.size(),
                    CLONE_VM | CLONE_VFORK | SIGCHLD, &child_args);
#endif
  const int clone_errno = errno;
  pthread_sigmask(SIG_SETMASK, &saved, nullptr);
  if (pid < 0) {
    *error = std::string("fork/exec ") + shell + ": " + LowerFirst(strerror(clone_errno));
    close_all();
    return false;
  }
  // Parent. Also set the group from here so a kill(-pid) right after fork can't miss
  // (a terminal's shell leads a session of its own, made before it could be signalled).
  if (options.terminal_fd < 0) setpgid(pid, pid);
  close(report[1]);
  report[1] = -1;
  if (out_pipe[1] >= 0) close(out_pipe[1]);
  if (err_pipe[1] >= 0) close(err_pipe[1]);
  out_pipe[1] = err_pipe[1] = -1;

  int payload[2] = {0, 0};
  ssize_t got;
  do {
    got = read(report[0], payload, sizeof(payload));
  } while (got < 0 && errno == EINTR);
  close(report[0]);
  report[0] = -1;
  if (got == static_cast<ssize_t>(sizeof(payload))) {
    int status;
    waitpid(pid, &status, 0);
    const char* what = payload[0] == 2 ? "chdir" : "fork/exec";
    *error = std::string(what) + " " + (payload[0] == 2 ? options.host_cwd : shell) + ": " +
             LowerFirst(strerror(payload[1]));
    if (out_pipe[0] >= 0) close(out_pipe[0]);
    if (err_pipe[0] >= 0) close(err_pipe[0]);
    return false;
  }
  process->pid = pid;
  process->stdout_fd = out_pipe[0];
  process->stderr_fd = err_pipe[0];
  if (process->stdout_fd >= 0) {
    SetNonBlocking(process->stdout_fd);
    SetNonBlocking(process->stderr_fd);
    GrowPipe(process->stdout_fd);
    GrowPipe(process->stderr_fd);
  }
  process->pidfd = OpenPidfd(pid);
  return true;
}

std::string DescribeWaitStatus(int wait_status) {
  if (WIFEXITED(wait_status)) return "exit status " + std::to_string(WEXITSTATUS(wait_status));
  if (WIFSIGNALED(wait_status)) {
    int sig = WTERMSIG(wait_status);
    const char* name = GoSignalName(sig);
    std::string text = "signal: " + (name ? std::string(name) : "signal " + std::to_string(sig));
    if (WCOREDUMP(wait_status)) text += " (core dumped)";
    return text;
  }
  return "unknown wait status";
}

}  // namespace fake_opensandbox
