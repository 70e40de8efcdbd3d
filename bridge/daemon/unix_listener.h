#pragma once
// The bridge's listening Unix socket. The bridge accepts connections itself (instead of
// letting gRPC bind the path) for two reasons: gRPC unlinks whatever file is at the path
// before binding, which would let a racing second bridge steal a live socket; and the
// peer's uid (SO_PEERCRED) can only be checked on the accepted descriptor. Accepted
// connections are handed to gRPC with AddInsecureChannelFromFd.

#include <functional>
#include <memory>
#include <string>

namespace abx::daemon {

class UnixListener {
 public:
  // Binds `path` (a stale file there is removed: the caller holds the bridge lock, so
  // nobody else serves it), mode 0600.
  static std::unique_ptr<UnixListener> Bind(const std::string& path, std::string* error);
  // Adopts a listening socket inherited through socket activation (systemd's
  // sd_listen_fds protocol: LISTEN_PID is ours, LISTEN_FDS=1, fd 3). The variables are
  // unset once read. Null when there is none, and null with `*error` when what was
  // passed is not one listening AF_UNIX stream socket. The path is not ours to remove.
  static std::unique_ptr<UnixListener> FromSystemd(std::string* error);
  ~UnixListener();

  // Accepts until Close(); `on_connection(fd, uid, pid)` gets each connection.
  void AcceptLoop(const std::function<void(int fd, unsigned uid, int pid)>& on_connection);
  // Stops AcceptLoop and, for a socket we bound, removes the path.
  void Close();
  const std::string& path() const { return path_; }
  // True for a socket we bound (and remove on Close), false for an inherited one.
  bool owns_path() const { return owns_path_; }

 private:
  UnixListener(int fd, std::string path, bool owns_path);
  int fd_;
  std::string path_;
  bool owns_path_;
  bool closed_ = false;
  int wake_pipe_[2] = {-1, -1};
};

}  // namespace abx::daemon
