#include "bridge/daemon/unix_listener.h"

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "common/platform.h"

namespace abx::daemon {

UnixListener::UnixListener(int fd, std::string path, bool owns_path)
    : fd_(fd), path_(std::move(path)), owns_path_(owns_path) {
  if (pipe2(wake_pipe_, O_CLOEXEC | O_NONBLOCK) != 0) wake_pipe_[0] = wake_pipe_[1] = -1;
}

UnixListener::~UnixListener() {
  Close();
  if (fd_ >= 0) close(fd_);
  if (wake_pipe_[0] >= 0) close(wake_pipe_[0]);
  if (wake_pipe_[1] >= 0) close(wake_pipe_[1]);
}

std::unique_ptr<UnixListener> UnixListener::Bind(const std::string& path, std::string* error) {
  if (!CheckUnixSocketPathLength(path, error)) return nullptr;
  int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) {
    *error = std::string("socket: ") + std::strerror(errno);
    return nullptr;
  }
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::memcpy(addr.sun_path, path.c_str(), path.size() + 1);
  unlink(path.c_str());  // a stale socket of a dead bridge; we hold the lock
  // Bind with a umask that leaves the socket 0600 from its first instant.
  const mode_t old_mask = umask(0177);
  const int rc = bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr);
  umask(old_mask);
  if (rc != 0 || listen(fd, 128) != 0) {
    *error = "bind " + path + ": " + std::strerror(errno);
    close(fd);
    return nullptr;
  }
  chmod(path.c_str(), 0600);
  return std::unique_ptr<UnixListener>(new UnixListener(fd, path, true));
}

std::unique_ptr<UnixListener> UnixListener::FromSystemd(std::string* error) {
  const char* pid_text = std::getenv("LISTEN_PID");
  const char* fds_text = std::getenv("LISTEN_FDS");
  if (pid_text == nullptr || fds_text == nullptr) return nullptr;
  const long listen_pid = std::strtol(pid_text, nullptr, 10);
  const long count = std::strtol(fds_text, nullptr, 10);
  // Read once, then gone (sd_listen_fds with unset_environment): a process we start
  // must never take these descriptors for its own.
  unsetenv("LISTEN_PID");
  unsetenv("LISTEN_FDS");
  unsetenv("LISTEN_FDNAMES");
  if (listen_pid != getpid()) return nullptr;  // meant for another process
  if (count != 1) {
    *error = "socket activation passed " + std::to_string(count) +
             " descriptors; the bridge takes exactly one listening Unix socket";
    return nullptr;
  }
  constexpr int kFirstFd = 3;  // SD_LISTEN_FDS_START
  int domain = 0, type = 0, listening = 0;
  socklen_t len = sizeof domain;
  const bool is_unix = getsockopt(kFirstFd, SOL_SOCKET, SO_DOMAIN, &domain, &len) == 0 &&
                       domain == AF_UNIX;
  len = sizeof type;
  const bool is_stream = getsockopt(kFirstFd, SOL_SOCKET, SO_TYPE, &type, &len) == 0 &&
                         type == SOCK_STREAM;
  len = sizeof listening;
  const bool is_listening =
      getsockopt(kFirstFd, SOL_SOCKET, SO_ACCEPTCONN, &listening, &len) == 0 && listening;
  if (!is_unix || !is_stream || !is_listening) {
    *error = "fd 3 from socket activation is not a listening AF_UNIX stream socket";
    return nullptr;
  }
  fcntl(kFirstFd, F_SETFD, FD_CLOEXEC);
  sockaddr_un addr{};
  socklen_t addr_len = sizeof addr;
  std::string path;
  // An abstract or unnamed socket has no path; the caller then falls back to --socket.
  if (getsockname(kFirstFd, reinterpret_cast<sockaddr*>(&addr), &addr_len) == 0 &&
      addr.sun_family == AF_UNIX && addr.sun_path[0] != '\0') {
    path = addr.sun_path;
  }
  return std::unique_ptr<UnixListener>(new UnixListener(kFirstFd, path, false));
}

void UnixListener::AcceptLoop(
    const std::function<void(int fd, unsigned uid, int pid)>& on_connection) {
  for (;;) {
    pollfd fds[2] = {{fd_, POLLIN, 0}, {wake_pipe_[0], POLLIN, 0}};
    if (poll(fds, 2, -1) < 0) {
      if (errno == EINTR) continue;
      return;
    }
    if (fds[1].revents) return;
    if (!(fds[0].revents & POLLIN)) {
      if (fds[0].revents & (POLLERR | POLLHUP | POLLNVAL)) return;
      continue;
    }
    // Non-blocking: gRPC drives the connection from its own event loop.
    int conn = accept4(fd_, nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK);
    if (conn < 0) {
      // EMFILE and the like: back off instead of spinning on a readable socket.
      if (errno != EAGAIN && errno != EINTR && errno != ECONNABORTED) poll(nullptr, 0, 50);
      continue;
    }
    uid_t uid = 0;
    pid_t pid = 0;
    if (!PeerCredentials(conn, &uid, &pid)) {
      close(conn);
      continue;
    }
    on_connection(conn, uid, pid);
  }
}

void UnixListener::Close() {
  // The descriptor stays open until destruction so a running AcceptLoop never polls a
  // closed (or reused) fd; the wake pipe ends the loop.
  if (closed_) return;
  closed_ = true;
  if (wake_pipe_[1] >= 0) {
    char byte = 1;
    (void)!write(wake_pipe_[1], &byte, 1);
  }
  if (owns_path_) unlink(path_.c_str());
}

}  // namespace abx::daemon
