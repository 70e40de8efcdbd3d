#include "tests/fake-opensandbox/sandbox_jail.h"

#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

namespace fake_opensandbox {
namespace {

struct Overlay {
  std::string lower, dir, work;
};

int Fail(const std::string& what) {
  std::fprintf(stderr, "fake-opensandbox jail: %s: %s\n", what.c_str(), std::strerror(errno));
  return 125;
}

bool WriteFile(const std::string& path, const std::string& text) {
  int fd = ::open(path.c_str(), O_WRONLY | O_CLOEXEC);
  if (fd < 0) return false;
  bool ok = ::write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size());
  ::close(fd);
  return ok;
}

// In the child, once its id maps are written: the overlays, then PROGRAM.
int EnterAndExec(const std::vector<Overlay>& overlays, char** program) {
  // Nothing mounted here may propagate back to the host's namespace.
  if (::mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0) return Fail("make / private");
  for (const Overlay& o : overlays) {
    ::mkdir(o.work.c_str(), 0700);
    ::mkdir(o.dir.c_str(), 0755);
    // userxattr: overlayfs keeps its own marks (opaque directories, redirects) in user.*
    // attributes, which a mount made in a user namespace may write.
    const std::string options =
        "lowerdir=" + o.lower + ",upperdir=" + o.dir + ",workdir=" + o.work + ",userxattr";
    if (::mount("overlay", o.dir.c_str(), "overlay", 0, options.c_str()) != 0) {
      return Fail("overlay " + o.lower + " on " + o.dir);
    }
  }
  ::execvp(program[0], program);
  return Fail(std::string("exec ") + program[0]);
}

// A container's first process starts with every signal at its default. posix_spawn
// leaves glibc's two internal signals (32, 33) ignored, and an ignored signal 32 is enough
// to change what a Go program such as execd does with SIGINT, so every disposition is
// reset here with the raw system call (glibc's sigaction refuses those two).
void ResetSignalDispositions() {
  struct KernelSigaction {
    void (*handler)(int);
    unsigned long flags;
    void (*restorer)();
    uint64_t mask;
  } action{};
  action.handler = SIG_DFL;
  for (int sig = 1; sig <= 64; ++sig) {
    if (sig == SIGKILL || sig == SIGSTOP) continue;
    ::syscall(SYS_rt_sigaction, sig, &action, nullptr, sizeof action.mask);
  }
  sigset_t none;
  sigemptyset(&none);
  ::sigprocmask(SIG_SETMASK, &none, nullptr);
}

}  // namespace

int RunJail(int argc, char** argv) {
  ResetSignalDispositions();
  std::vector<Overlay> overlays;
  int at = 2;
  for (; at < argc && std::strcmp(argv[at], "--") != 0; ++at) {
    const std::string flag = argv[at];
    if (flag == "--cgroup-procs" && at + 1 < argc) {
      // Joined before anything forks, so every process of the sandbox is in the group.
      if (!WriteFile(argv[++at], "0\n")) return Fail(std::string("join the control group of ") + argv[at]);
      continue;
    }
    if (flag != "--overlay" || at + 1 >= argc) {
      std::fprintf(stderr, "usage: %s jail [--cgroup-procs FILE] [--overlay LOWER:DIR:WORK]... -- PROGRAM ARGS...\n",
                   argv[0]);
      return 2;
    }
    const std::string spec = argv[++at];
    const size_t first = spec.find(':'), second = spec.rfind(':');
    if (first == std::string::npos || first == second) {
      std::fprintf(stderr, "fake-opensandbox jail: --overlay %s is not LOWER:DIR:WORK\n", spec.c_str());
      return 2;
    }
    overlays.push_back({spec.substr(0, first), spec.substr(first + 1, second - first - 1),
                        spec.substr(second + 1)});
  }
  if (at + 1 >= argc) {
    std::fprintf(stderr, "fake-opensandbox jail: no program after --\n");
    return 2;
  }
  char** program = argv + at + 1;

  int entered[2], mapped[2];
  if (::pipe2(entered, O_CLOEXEC) != 0 || ::pipe2(mapped, O_CLOEXEC) != 0) return Fail("pipe");
  const pid_t parent = ::getpid();
  const pid_t child = ::fork();
  if (child < 0) return Fail("fork");
  if (child == 0) {
    ::close(entered[0]);
    ::close(mapped[1]);
    if (::unshare(CLONE_NEWUSER | CLONE_NEWNS) != 0) _exit(Fail("unshare user and mount namespaces"));
    char byte = 1;
    if (::write(entered[1], &byte, 1) != 1) _exit(Fail("tell the parent"));
    if (::read(mapped[0], &byte, 1) != 1) _exit(125);  // the parent failed and said so
    // Set after the namespace change (a change of credentials may clear it), then checked:
    // a parent gone before this line would never send the signal.
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (::getppid() != parent) _exit(125);
    _exit(EnterAndExec(overlays, program));
  }
  ::close(entered[1]);
  ::close(mapped[0]);
  char byte = 0;
  if (::read(entered[0], &byte, 1) != 1) {
    ::waitpid(child, nullptr, 0);
    return 125;
  }
  // Identity maps: root inside is uid 0 of the host's files, and every other id (65534,
  // 1000...) a command chowns to is the same number on the host. The sandbox's mounts are
  // its own, so these ids reach only the files the sandbox was given.
  const std::string proc = "/proc/" + std::to_string(child);
  if (!WriteFile(proc + "/uid_map", "0 0 4294967295\n") ||
      !WriteFile(proc + "/gid_map", "0 0 4294967295\n")) {
    int code = Fail("write the id maps of " + proc);
    ::kill(child, SIGKILL);
    ::waitpid(child, nullptr, 0);
    return code;
  }
  if (::write(mapped[1], &byte, 1) != 1) return Fail("tell the child");
  int status = 0;
  while (::waitpid(child, &status, 0) < 0 && errno == EINTR) {
  }
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return WEXITSTATUS(status);
}

}  // namespace fake_opensandbox
