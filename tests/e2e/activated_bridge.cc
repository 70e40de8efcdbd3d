#include "tests/e2e/activated_bridge.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <thread>

namespace abx::e2e {
namespace {

std::string Errno(const std::string& what) { return what + ": " + std::strerror(errno); }

// Decimal digits of `value` into `out` (async-signal-safe: used between fork and exec).
void FormatPid(pid_t value, char* out) {
  char digits[16];
  int n = 0;
  do {
    digits[n++] = static_cast<char>('0' + value % 10);
    value /= 10;
  } while (value > 0 && n < 15);
  while (n > 0) *out++ = digits[--n];
  *out = '\0';
}

}  // namespace

std::unique_ptr<ActivatedBridge> ActivatedBridge::Start(const std::string& bridge_binary,
                                                        const std::string& socket_path,
                                                        const std::vector<std::string>& env,
                                                        const std::string& log_path,
                                                        std::string* error) {
  sockaddr_un addr{};
  if (socket_path.size() >= sizeof addr.sun_path) {
    *error = "socket path too long: " + socket_path;
    return nullptr;
  }
  const int listen_fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (listen_fd < 0) {
    *error = Errno("socket");
    return nullptr;
  }
  addr.sun_family = AF_UNIX;
  std::memcpy(addr.sun_path, socket_path.c_str(), socket_path.size() + 1);
  ::unlink(socket_path.c_str());
  const mode_t old_mask = ::umask(0177);
  const int bound = bind(listen_fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr);
  ::umask(old_mask);
  if (bound != 0 || listen(listen_fd, 64) != 0) {
    *error = Errno("bind/listen " + socket_path);
    ::close(listen_fd);
    return nullptr;
  }
  const int log_fd = ::open(log_path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
  const int null_fd = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
  if (log_fd < 0 || null_fd < 0) {
    *error = Errno("open " + log_path + " or /dev/null");
    ::close(listen_fd);
    if (log_fd >= 0) ::close(log_fd);
    if (null_fd >= 0) ::close(null_fd);
    return nullptr;
  }

  // Everything the child needs exists before fork: between fork and exec a threaded
  // parent's child may only make async-signal-safe calls.
  std::vector<std::string> args = {bridge_binary, "serve", "--socket", socket_path};
  std::vector<char*> argv;
  for (std::string& arg : args) argv.push_back(arg.data());
  argv.push_back(nullptr);
  std::vector<std::string> entries = env;
  entries.push_back("LISTEN_FDS=1");
  std::vector<char*> envp;
  for (std::string& entry : entries) envp.push_back(entry.data());
  char listen_pid[32] = "LISTEN_PID=";
  envp.push_back(listen_pid);
  envp.push_back(nullptr);

  const pid_t pid = fork();
  if (pid < 0) {
    *error = Errno("fork");
    ::close(listen_fd);
    ::close(log_fd);
    ::close(null_fd);
    return nullptr;
  }
  if (pid == 0) {
    // The child learns its own pid only now: this is why LISTEN_PID is set after fork.
    FormatPid(getpid(), listen_pid + std::strlen("LISTEN_PID="));
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, nullptr);
    ::dup2(null_fd, 0);
    ::dup2(log_fd, 1);
    ::dup2(log_fd, 2);
    if (listen_fd == 3) {
      ::fcntl(3, F_SETFD, 0);
    } else {
      ::dup2(listen_fd, 3);  // the copy at fd 3 does not close on exec
    }
    ::execve(argv[0], argv.data(), envp.data());
    _exit(127);
  }
  ::close(listen_fd);
  ::close(log_fd);
  ::close(null_fd);
  return std::unique_ptr<ActivatedBridge>(new ActivatedBridge(pid));
}

std::optional<ExitStatus> ActivatedBridge::WaitExit(Millis timeout) {
  if (status_) return status_;
  const auto deadline = Clock::now() + timeout;
  for (;;) {
    int raw = 0;
    const pid_t done = ::waitpid(pid_, &raw, WNOHANG);
    if (done == pid_) {
      ExitStatus status;
      status.exited = WIFEXITED(raw);
      status.code = status.exited ? WEXITSTATUS(raw) : 0;
      status.signal = WIFSIGNALED(raw) ? WTERMSIG(raw) : 0;
      status_ = status;
      return status_;
    }
    if (done < 0 && errno != EINTR) return std::nullopt;
    if (Clock::now() >= deadline) return std::nullopt;
    std::this_thread::sleep_for(Millis(10));
  }
}

ActivatedBridge::~ActivatedBridge() {
  if (status_) return;
  ::kill(pid_, SIGTERM);
  if (WaitExit(Millis(5000))) return;
  ::kill(pid_, SIGKILL);
  WaitExit(Millis(5000));
}

}  // namespace abx::e2e
