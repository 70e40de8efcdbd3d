#include "bridge/unix_listener.h"

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

namespace abx::bridge {

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
  const char* pid = std::getenv("LISTEN_PID");
  const char* fds = std::getenv("LISTEN_FDS");
  if (!pid || !fds || std::atoi(pid) != getpid() || std::atoi(fds) < 1) return nullptr;
  constexpr int kFirstFd = 3;  // SD_LISTEN_FDS_START
  int type = 0;
  socklen_t len = sizeof type;
  if (getsockopt(kFirstFd, SOL_SOCKET, SO_TYPE, &type, &len) != 0 || type != SOCK_STREAM) {
    *error = "fd 3 from socket activation is not a stream socket";
    return nullptr;
  }
  fcntl(kFirstFd, F_SETFD, FD_CLOEXEC);
  unsetenv("LISTEN_PID");
  unsetenv("LISTEN_FDS");
  unsetenv("LISTEN_FDNAMES");
  sockaddr_un addr{};
  socklen_t addr_len = sizeof addr;
  std::string path;
  if (getsockname(kFirstFd, reinterpret_cast<sockaddr*>(&addr), &addr_len) == 0 &&
      addr.sun_family == AF_UNIX) {
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
    if (conn < 0) continue;
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

}  // namespace abx::bridge
