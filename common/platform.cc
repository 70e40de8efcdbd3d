#include "common/platform.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <string.h>
#include <sys/file.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cstdlib>
#include <utility>

extern char** environ;

namespace abx {
namespace {

std::string ErrnoText(const std::string& what, const std::string& path, int err) {
  return what + " " + path + ": " + strerror(err);
}

void SetError(std::string* error, std::string text) {
  if (error != nullptr) *error = std::move(text);
}

// A descriptor closed when it goes out of scope.
class ScopedFd {
 public:
  explicit ScopedFd(int fd = -1) : fd_(fd) {}
  ~ScopedFd() { Reset(); }
  ScopedFd(const ScopedFd&) = delete;
  ScopedFd& operator=(const ScopedFd&) = delete;
  int get() const { return fd_; }
  int Release() { return std::exchange(fd_, -1); }
  void Reset(int fd = -1) {
    if (fd_ >= 0) close(fd_);
    fd_ = fd;
  }

 private:
  int fd_;
};

bool FillUnixAddress(const std::string& path, sockaddr_un* address, std::string* error) {
  if (!CheckUnixSocketPathLength(path, error)) return false;
  memset(address, 0, sizeof(*address));
  address->sun_family = AF_UNIX;
  memcpy(address->sun_path, path.data(), path.size());
  return true;
}

// mkdir -p, each created component with `mode`.
bool MakeDirs(const std::string& dir, mode_t mode, std::string* error) {
  struct stat st;
  if (stat(dir.c_str(), &st) == 0) return true;
  size_t slash = dir.find_last_of('/');
  if (slash != std::string::npos && slash > 0) {
    if (!MakeDirs(dir.substr(0, slash), mode, error)) return false;
  }
  if (mkdir(dir.c_str(), mode) != 0 && errno != EEXIST) {
    SetError(error, ErrnoText("mkdir", dir, errno));
    return false;
  }
  return true;
}

// Looks `name` up in PATH the way execvp would, but before fork, where allocation is safe.
std::string ResolveExecutable(const std::string& name) {
  if (name.find('/') != std::string::npos) return name;
  const char* path_env = getenv("PATH");
  std::string path = path_env != nullptr ? path_env : "/usr/local/bin:/usr/bin:/bin";
  size_t start = 0;
  while (start <= path.size()) {
    size_t end = path.find(':', start);
    if (end == std::string::npos) end = path.size();
    std::string dir = path.substr(start, end - start);
    if (dir.empty()) dir = ".";
    std::string candidate = dir + "/" + name;
    if (access(candidate.c_str(), X_OK) == 0) return candidate;
    start = end + 1;
  }
  return name;
}

// Closes every descriptor from `first` up, in a forked child (async-signal-safe only).
void CloseFrom(int first, int max_fd) {
#ifdef SYS_close_range
  if (syscall(SYS_close_range, static_cast<unsigned>(first), ~0U, 0) == 0) return;
#endif
  for (int fd = first; fd < max_fd; ++fd) close(fd);
}

}  // namespace

bool CheckUnixSocketPathLength(const std::string& path, std::string* error) {
  if (path.size() <= kMaxUnixSocketPathLength) return true;
  SetError(error, "socket path " + path + " is " + std::to_string(path.size()) +
                      " bytes, longer than the " + std::to_string(kMaxUnixSocketPathLength) +
                      " a Unix socket address holds; choose a shorter path");
  return false;
}

bool MakeDirectories(const std::string& dir, std::string* error) {
  if (dir.empty()) {
    SetError(error, "empty directory path");
    return false;
  }
  return MakeDirs(dir, 0700, error);
}

bool EnsurePrivateDir(const std::string& dir, std::string* error) {
  if (dir.empty()) {
    SetError(error, "empty directory path");
    return false;
  }
  if (!MakeDirs(dir, 0700, error)) return false;
  struct stat st;
  if (lstat(dir.c_str(), &st) != 0) {
    SetError(error, ErrnoText("lstat", dir, errno));
    return false;
  }
  if (S_ISLNK(st.st_mode)) {
    SetError(error, "refusing " + dir + ": it is a symbolic link, not a directory");
    return false;
  }
  if (!S_ISDIR(st.st_mode)) {
    SetError(error, "refusing " + dir + ": not a directory");
    return false;
  }
  if (st.st_uid != geteuid()) {
    SetError(error, "refusing " + dir + ": owned by uid " + std::to_string(st.st_uid) +
                        ", not by us (uid " + std::to_string(geteuid()) + ")");
    return false;
  }
  if ((st.st_mode & 077) != 0) {
    char mode[8];
    snprintf(mode, sizeof(mode), "%04o", static_cast<unsigned>(st.st_mode & 07777));
    SetError(error, "refusing " + dir + ": mode " + mode +
                        " lets group or others in; it must be 0700 (chmod 700 " + dir + ")");
    return false;
  }
  return true;
}

// ---------------------------------------------------------------------------
// FileLock

FileLock::FileLock(int fd, std::string path) : fd_(fd), path_(std::move(path)) {}

FileLock::~FileLock() {
  if (fd_ >= 0) close(fd_);  // closing the last descriptor releases the flock
}

std::unique_ptr<FileLock> FileLock::TryAcquire(const std::string& path, std::string* error,
                                               bool* busy) {
  if (busy != nullptr) *busy = false;
  ScopedFd fd(open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600));
  if (fd.get() < 0) {
    SetError(error, ErrnoText("open lock file", path, errno));
    return nullptr;
  }
  while (flock(fd.get(), LOCK_EX | LOCK_NB) != 0) {
    if (errno == EINTR) continue;
    if (errno == EWOULDBLOCK) {
      if (busy != nullptr) *busy = true;
      SetError(error, "lock " + path + " is held by another process");
    } else {
      SetError(error, ErrnoText("flock", path, errno));
    }
    return nullptr;
  }
  return std::unique_ptr<FileLock>(new FileLock(fd.Release(), path));
}

std::unique_ptr<FileLock> FileLock::Acquire(const std::string& path, int timeout_ms,
                                            std::string* error) {
  const int64_t start = MonotonicMillis();
  for (;;) {
    bool busy = false;
    std::unique_ptr<FileLock> lock = TryAcquire(path, error, &busy);
    if (lock != nullptr || !busy) return lock;
    const int64_t waited = MonotonicMillis() - start;
    if (waited >= timeout_ms) {
      SetError(error, "lock " + path + " is held by another process (waited " +
                          std::to_string(waited) + " ms)");
      return nullptr;
    }
    usleep(5000);
  }
}

bool FileLock::WriteContents(const std::string& text, std::string* error) {
  if (ftruncate(fd_, 0) != 0) {
    SetError(error, ErrnoText("truncate", path_, errno));
    return false;
  }
  if (lseek(fd_, 0, SEEK_SET) < 0 || !WriteAll(fd_, text.data(), text.size())) {
    SetError(error, ErrnoText("write", path_, errno));
    return false;
  }
  return true;
}

// ---------------------------------------------------------------------------
// Unix sockets

bool PeerCredentials(int fd, uid_t* uid, pid_t* pid) {
  struct ucred credentials;
  socklen_t length = sizeof(credentials);
  if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &credentials, &length) != 0 ||
      length != sizeof(credentials)) {
    return false;
  }
  if (uid != nullptr) *uid = credentials.uid;
  if (pid != nullptr) *pid = credentials.pid;
  return true;
}

const char* UnixSocketProbeName(UnixSocketProbe probe) {
  switch (probe) {
    case UnixSocketProbe::kAccepting: return "accepting";
    case UnixSocketProbe::kAbsent: return "absent";
    case UnixSocketProbe::kRefused: return "refused";
    case UnixSocketProbe::kTimeout: return "timeout";
    case UnixSocketProbe::kError: return "error";
  }
  return "unknown";
}

UnixSocketProbe ProbeUnixSocket(const std::string& path, int timeout_ms, uid_t* peer_uid) {
  auto accepted = [&](int fd) {
    if (peer_uid != nullptr && !PeerCredentials(fd, peer_uid, nullptr)) {
      return UnixSocketProbe::kError;
    }
    return UnixSocketProbe::kAccepting;
  };
  sockaddr_un address;
  if (!FillUnixAddress(path, &address, nullptr)) return UnixSocketProbe::kError;
  ScopedFd fd(socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
  if (fd.get() < 0) return UnixSocketProbe::kError;
  int rc;
  do {
    rc = connect(fd.get(), reinterpret_cast<sockaddr*>(&address), sizeof(address));
  } while (rc != 0 && errno == EINTR);
  if (rc == 0) return accepted(fd.get());
  switch (errno) {
    case ENOENT: return UnixSocketProbe::kAbsent;
    case ECONNREFUSED: return UnixSocketProbe::kRefused;
    case EAGAIN:       // Linux: the listener's backlog is full
    case EINPROGRESS:
      break;
    default:
      return UnixSocketProbe::kError;
  }
  // A full backlog on a Unix socket fails with EAGAIN rather than completing later, so
  // retry the connect until the timeout instead of waiting for writability.
  const int64_t deadline = MonotonicMillis() + timeout_ms;
  while (MonotonicMillis() < deadline) {
    poll(nullptr, 0, 5);
    fd.Reset(socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
    if (fd.get() < 0) return UnixSocketProbe::kError;
    rc = connect(fd.get(), reinterpret_cast<sockaddr*>(&address), sizeof(address));
    if (rc == 0) return accepted(fd.get());
    if (errno == ECONNREFUSED) return UnixSocketProbe::kRefused;
    if (errno == ENOENT) return UnixSocketProbe::kAbsent;
    if (errno != EAGAIN && errno != EINPROGRESS && errno != EINTR) {
      return UnixSocketProbe::kError;
    }
  }
  return UnixSocketProbe::kTimeout;
}

int ConnectUnixSocket(const std::string& path, int timeout_ms, std::string* error) {
  sockaddr_un address;
  if (!FillUnixAddress(path, &address, error)) return -1;
  const int64_t deadline = MonotonicMillis() + timeout_ms;
  for (;;) {
    ScopedFd fd(socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
    if (fd.get() < 0) {
      SetError(error, ErrnoText("socket", path, errno));
      return -1;
    }
    if (connect(fd.get(), reinterpret_cast<sockaddr*>(&address), sizeof(address)) == 0) {
      return fd.Release();
    }
    const int err = errno;
    // As in ProbeUnixSocket: a full backlog fails with EAGAIN; try again until the timeout.
    if ((err != EAGAIN && err != EINPROGRESS && err != EINTR) || MonotonicMillis() >= deadline) {
      SetError(error, ErrnoText("connect", path, err == EINPROGRESS ? EAGAIN : err));
      return -1;
    }
    poll(nullptr, 0, 5);
  }
}

bool CanConnectUnix(const std::string& path, int timeout_ms) {
  return ProbeUnixSocket(path, timeout_ms) == UnixSocketProbe::kAccepting;
}

// ---------------------------------------------------------------------------
// Processes

bool SpawnDaemon(const std::vector<std::string>& argv, const std::string& log_path,
                 pid_t* pid, std::string* error, const std::vector<std::string>* env) {
  if (argv.empty()) {
    SetError(error, "spawn: empty argv");
    return false;
  }
  // Everything the child needs is prepared here: between fork and exec a threaded
  // parent's child may only make async-signal-safe calls (no allocation, no locks).
  const std::string program = ResolveExecutable(argv[0]);
  std::vector<char*> args;
  for (const std::string& arg : argv) args.push_back(const_cast<char*>(arg.c_str()));
  args.push_back(nullptr);
  std::vector<char*> envp;
  if (env != nullptr) {
    for (const std::string& entry : *env) envp.push_back(const_cast<char*>(entry.c_str()));
    envp.push_back(nullptr);
  }
  char* const* child_env = env != nullptr ? envp.data() : environ;

  ScopedFd dev_null(open("/dev/null", O_RDONLY | O_CLOEXEC));
  if (dev_null.get() < 0) {
    SetError(error, ErrnoText("open", "/dev/null", errno));
    return false;
  }
  ScopedFd log(open(log_path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600));
  if (log.get() < 0) {
    SetError(error, ErrnoText("open log", log_path, errno));
    return false;
  }
  // The child reports a failed exec through this pipe; a successful exec closes it
  // (close-on-exec), so the parent's read returns 0.
  int report[2];
  if (pipe2(report, O_CLOEXEC) != 0) {
    SetError(error, ErrnoText("pipe", "for " + program, errno));
    return false;
  }
  ScopedFd report_read(report[0]);
  ScopedFd report_write(report[1]);
  struct rlimit files;
  const int max_fd = getrlimit(RLIMIT_NOFILE, &files) == 0 && files.rlim_cur != RLIM_INFINITY
                         ? static_cast<int>(std::min<rlim_t>(files.rlim_cur, 65536))
                         : 4096;

  const pid_t child = fork();
  if (child < 0) {
    SetError(error, ErrnoText("fork", "for " + program, errno));
    return false;
  }
  if (child == 0) {
    // Child: async-signal-safe calls only.
    setsid();
    dup2(dev_null.get(), STDIN_FILENO);
    dup2(log.get(), STDOUT_FILENO);
    dup2(log.get(), STDERR_FILENO);
    dup2(report_write.get(), 3);
    fcntl(3, F_SETFD, FD_CLOEXEC);
    CloseFrom(4, max_fd);
    struct sigaction default_action;
    memset(&default_action, 0, sizeof(default_action));
    default_action.sa_handler = SIG_DFL;
    for (int signal_number = 1; signal_number < NSIG; ++signal_number) {
      sigaction(signal_number, &default_action, nullptr);
    }
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, nullptr);
    umask(077);
    if (chdir("/") != 0) {
      // Not fatal: the daemon only pins its old working directory.
    }
    execve(program.c_str(), args.data(), child_env);
    int exec_errno = errno;
    ssize_t ignored = write(3, &exec_errno, sizeof(exec_errno));
    (void)ignored;
    _exit(127);
  }

  report_write.Reset();
  int exec_errno = 0;
  ssize_t got;
  do {
    got = read(report_read.get(), &exec_errno, sizeof(exec_errno));
  } while (got < 0 && errno == EINTR);
  if (got == sizeof(exec_errno)) {
    int status;
    waitpid(child, &status, 0);
    SetError(error, ErrnoText("exec", program, exec_errno));
    return false;
  }
  if (pid != nullptr) *pid = child;
  return true;
}

bool WaitChild(pid_t pid, ChildState* state) {
  int status = 0;
  pid_t rc;
  do {
    rc = waitpid(pid, &status, WNOHANG);
  } while (rc < 0 && errno == EINTR);
  if (rc < 0) return false;
  *state = ChildState();
  if (rc == 0) return true;
  state->exited = true;
  if (WIFEXITED(status)) state->exit_code = WEXITSTATUS(status);
  if (WIFSIGNALED(status)) state->term_signal = WTERMSIG(status);
  return true;
}

std::string SelfExecutableDir() {
  char buffer[PATH_MAX];
  ssize_t length = readlink("/proc/self/exe", buffer, sizeof(buffer) - 1);
  if (length <= 0) return "";
  std::string path(buffer, static_cast<size_t>(length));
  size_t slash = path.find_last_of('/');
  if (slash == std::string::npos) return "";
  return slash == 0 ? "/" : path.substr(0, slash);
}

std::string ReadFileTail(const std::string& path, size_t max_bytes) {
  ScopedFd fd(open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (fd.get() < 0) return "";
  struct stat st;
  if (fstat(fd.get(), &st) != 0) return "";
  const off_t size = st.st_size;
  const off_t start = size > static_cast<off_t>(max_bytes) ? size - max_bytes : 0;
  std::string text(static_cast<size_t>(size - start), '\0');
  size_t filled = 0;
  while (filled < text.size()) {
    ssize_t got = pread(fd.get(), &text[filled], text.size() - filled, start + filled);
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) break;
    filled += static_cast<size_t>(got);
  }
  text.resize(filled);
  if (start > 0) {
    size_t newline = text.find('\n');
    if (newline != std::string::npos && newline + 1 < text.size()) text.erase(0, newline + 1);
  }
  return text;
}

bool WriteAll(int fd, const char* data, size_t size) {
  while (size > 0) {
    ssize_t wrote = write(fd, data, size);
    if (wrote < 0) {
      if (errno == EINTR) continue;
      return false;
    }
    data += wrote;
    size -= static_cast<size_t>(wrote);
  }
  return true;
}

int64_t MonotonicMillis() {
  timespec now;
  clock_gettime(CLOCK_MONOTONIC, &now);
  return static_cast<int64_t>(now.tv_sec) * 1000 + now.tv_nsec / 1000000;
}

}  // namespace abx
