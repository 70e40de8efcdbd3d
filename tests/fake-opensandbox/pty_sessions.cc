#include "tests/fake-opensandbox/pty_sessions.h"

#include <fcntl.h>
#include <poll.h>
#include <pty.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>

#include "tests/fake-opensandbox/child_process.h"
#include "tests/fake-opensandbox/ids.h"

namespace fake_opensandbox {
namespace {

constexpr size_t kReadBytes = 32 << 10;  // execd's largest output frame

}  // namespace

PtySession::~PtySession() {
  Kill();
  for (std::thread& pump : pumps_) {
    // The pump that dropped the last reference is this thread, about to end.
    if (pump.get_id() == std::this_thread::get_id()) {
      pump.detach();
    } else {
      pump.join();
    }
  }
}

bool PtySession::Held() {
  std::lock_guard<std::mutex> lock(mu_);
  return client_ != nullptr || std::chrono::steady_clock::now() < stale_until_;
}

bool PtySession::running() {
  std::lock_guard<std::mutex> lock(mu_);
  return pid_ > 0;
}

uint64_t PtySession::output_offset() {
  std::lock_guard<std::mutex> lock(mu_);
  return total_;
}

PtySession::Attached PtySession::Attach(std::shared_ptr<PtyClient> client, bool takeover, bool pipe_mode,
                                        uint64_t since, const PtyStart& start) {
  Attached out;
  std::lock_guard<std::mutex> lock(mu_);
  if (killed_) {
    out.error = "pty session " + id_ + " not found";
    return out;
  }
  if (client_ || std::chrono::steady_clock::now() < stale_until_) {
    if (!takeover) {
      out.error = "another client is already connected to pty session " + id_;
      return out;
    }
    if (client_) client_->QueueEvict();
    client_.reset();
    stale_until_ = {};
  }
  if (pid_ <= 0 && !StartLocked(pipe_mode, start, &out.error)) return out;
  out.ok = true;
  out.pipe_mode = pipe_mode_;
  if (since < total_) {
    const uint64_t kept_from = total_ - ring_.size();
    out.replay_offset = std::max(since, kept_from);
    out.replay = ring_.substr(static_cast<size_t>(out.replay_offset - kept_from));
  }
  client_ = std::move(client);
  client_lag_bytes_ = start.exit_overtakes_bytes;
  held_back_.clear();
  return out;
}

std::string PtySession::Recorded(uint64_t* from) {
  std::lock_guard<std::mutex> lock(mu_);
  *from = total_ - ring_.size();
  return ring_;
}

void PtySession::Detach(const PtyClient* client, int64_t stale_hold_ms) {
  std::lock_guard<std::mutex> lock(mu_);
  if (client_.get() != client) return;
  client_.reset();
  if (stale_hold_ms > 0) stale_until_ = std::chrono::steady_clock::now() + std::chrono::milliseconds(stale_hold_ms);
}

bool PtySession::StartLocked(bool pipe_mode, const PtyStart& start, std::string* error) {
  SpawnOptions options;
  options.command = command_;
  options.interactive = true;
  options.sigint_ignored = true;
  options.env = start.env;
  options.host_cwd = start.host_cwd;
  options.chroot_dir = start.chroot_dir;
  options.chroot_cwd = start.chroot_cwd;
  options.mounts = start.mounts;
  int master = -1, terminal = -1, stdin_pipe[2] = {-1, -1};
  if (pipe_mode) {
    if (pipe2(stdin_pipe, O_CLOEXEC) != 0) {
      *error = std::string("pipe: ") + std::strerror(errno);
      return false;
    }
    options.stdin_fd = stdin_pipe[0];
  } else {
    struct winsize size = {};
    size.ws_col = 80;
    size.ws_row = 24;
    if (openpty(&master, &terminal, nullptr, nullptr, &size) != 0) {
      *error = std::string("open pty: ") + std::strerror(errno);
      return false;
    }
    fcntl(master, F_SETFD, FD_CLOEXEC);
    fcntl(terminal, F_SETFD, FD_CLOEXEC);
    options.terminal_fd = terminal;
  }
  SpawnedProcess process;
  const bool spawned = SpawnShell(options, &process, error);
  if (terminal >= 0) close(terminal);
  if (stdin_pipe[0] >= 0) close(stdin_pipe[0]);
  if (!spawned) {
    if (master >= 0) close(master);
    if (stdin_pipe[1] >= 0) close(stdin_pipe[1]);
    return false;
  }
  if (process.pidfd >= 0) close(process.pidfd);
  // Shared with the pump's reading descriptor, which polls first.
  for (int fd : {master, stdin_pipe[1]}) {
    if (fd >= 0) fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
  }
  pid_ = process.pid;
  pipe_mode_ = pipe_mode;
  master_fd_ = master;
  stdin_fd_ = stdin_pipe[1];
  const int out_fd = pipe_mode ? process.stdout_fd : dup(master);
  // The pump keeps the session alive while the process runs: it may be the last to let
  // go of it, and then its thread ends right after (see the destructor).
  const int err_fd = pipe_mode ? process.stderr_fd : -1;
  pumps_.emplace_back([self = shared_from_this(), pid = process.pid, out_fd, err_fd] { self->Pump(pid, out_fd, err_fd); });
  return true;
}

void PtySession::Append(uint8_t kind, const char* data, size_t size) {
  std::shared_ptr<PtyClient> client;
  {
    std::lock_guard<std::mutex> lock(mu_);
    total_ += size;
    ring_.append(data, size);
    if (ring_.size() > kReplayBytes) ring_.erase(0, ring_.size() - kReplayBytes);
    if (client_ && client_lag_bytes_ > 0) {  // the pty_exit_overtakes_bytes fault
      held_back_.append(data, size);
      if (held_back_.size() > client_lag_bytes_) {
        const size_t due = held_back_.size() - static_cast<size_t>(client_lag_bytes_);
        client_->QueueOutput(kind, held_back_.substr(0, due));
        held_back_.erase(0, due);
      }
    } else if (client_) {
      client_->QueueOutput(kind, std::string(data, size));
    }
    client = client_;
  }
  // A client that does not keep up slows the shell down, as execd's synchronous hand-
  // over does, rather than the fake buffering without bound.
  while (client && client->QueuedBytes() > kMaxQueuedBytes) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
    std::lock_guard<std::mutex> lock(mu_);
    if (client_ != client) break;
  }
}

void PtySession::Pump(pid_t pid, int out_fd, int err_fd) {
  std::vector<char> buffer(kReadBytes);
  pollfd fds[2] = {{out_fd, POLLIN, 0}, {err_fd, POLLIN, 0}};
  int open = err_fd >= 0 ? 2 : 1;
  while (open > 0) {
    const int ready = poll(fds, err_fd >= 0 ? 2 : 1, -1);
    if (ready < 0) {
      if (errno == EINTR) continue;
      break;
    }
    for (int i = 0; i < 2; ++i) {
      if (fds[i].fd < 0 || !(fds[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
      const ssize_t n = read(fds[i].fd, buffer.data(), buffer.size());
      if (n < 0 && (errno == EINTR || errno == EAGAIN)) continue;
      if (n <= 0) {  // EOF, or EIO once a terminal's last holder closed it
        close(fds[i].fd);
        fds[i].fd = -1;
        --open;
        continue;
      }
      Append(i == 0 ? 1 : 2, buffer.data(), static_cast<size_t>(n));
    }
  }
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  const int exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  std::lock_guard<std::mutex> lock(mu_);
  if (pid_ == pid) {
    pid_ = -1;
    if (master_fd_ >= 0) close(master_fd_);
    if (stdin_fd_ >= 0) close(stdin_fd_);
    master_fd_ = stdin_fd_ = -1;
  }
  if (client_) {
    client_->QueueExit(exit_code);  // what is held back never reaches it
    client_.reset();
    held_back_.clear();
  }
}

bool PtySession::WriteStdin(const std::string& bytes) {
  int fd;
  {
    std::lock_guard<std::mutex> lock(mu_);
    fd = pipe_mode_ ? stdin_fd_ : master_fd_;
    if (fd < 0) return false;
    fd = dup(fd);  // the process may end (and its descriptors close) while we write
  }
  if (fd < 0) return false;
  // Non-blocking, with a bound: a shell that reads nothing for that long fails the write
  // (STDIN_WRITE_FAILED) instead of holding the connection's thread.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  size_t at = 0;
  while (at < bytes.size()) {
    const ssize_t n = write(fd, bytes.data() + at, bytes.size() - at);
    if (n > 0) {
      at += static_cast<size_t>(n);
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && errno != EAGAIN) break;
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) break;
    pollfd p{fd, POLLOUT, 0};
    poll(&p, 1, static_cast<int>(left.count()));
  }
  close(fd);
  return at == bytes.size();
}

void PtySession::Resize(int cols, int rows) {
  if (cols <= 0 || rows <= 0) return;
  std::lock_guard<std::mutex> lock(mu_);
  if (master_fd_ < 0) return;  // pipe mode, or nothing runs
  struct winsize size = {};
  size.ws_col = static_cast<unsigned short>(cols);
  size.ws_row = static_cast<unsigned short>(rows);
  ioctl(master_fd_, TIOCSWINSZ, &size);
}

void PtySession::Signal(int sig) {
  std::lock_guard<std::mutex> lock(mu_);
  if (pid_ > 0) kill(-pid_, sig);
}

void PtySession::Kill() {
  std::lock_guard<std::mutex> lock(mu_);
  killed_ = true;
  if (pid_ > 0) kill(-pid_, SIGKILL);
}

std::shared_ptr<PtySession> PtySessions::Create(std::string sandbox_cwd, std::string command) {
  auto session = std::make_shared<PtySession>(NewUuid4(), std::move(sandbox_cwd), std::move(command));
  std::lock_guard<std::mutex> lock(mu_);
  sessions_[session->id()] = session;
  return session;
}

std::shared_ptr<PtySession> PtySessions::Find(const std::string& id) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = sessions_.find(id);
  return it == sessions_.end() ? nullptr : it->second;
}

bool PtySessions::Delete(const std::string& id) {
  std::shared_ptr<PtySession> session;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = sessions_.find(id);
    if (it == sessions_.end()) return false;
    session = std::move(it->second);
    sessions_.erase(it);
  }
  session->Kill();
  return true;
}

void PtySessions::DeleteAll() {
  std::map<std::string, std::shared_ptr<PtySession>> sessions;
  {
    std::lock_guard<std::mutex> lock(mu_);
    sessions.swap(sessions_);
  }
  for (auto& [id, session] : sessions) session->Kill();
}

}  // namespace fake_opensandbox
