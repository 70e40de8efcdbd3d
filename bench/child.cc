#include "bench/child.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>

#include "bench/clock.h"

extern char** environ;

namespace abx::bench {

Child::~Child() {
  if (pid_ > 0 && !reaped_) Stop(0);
  Reset();
}

Child::Child(Child&& other) noexcept { *this = std::move(other); }

Child& Child::operator=(Child&& other) noexcept {
  if (this != &other) {
    if (pid_ > 0 && !reaped_) Stop(0);
    Reset();
    pid_ = other.pid_;
    stdin_fd_ = other.stdin_fd_;
    stdout_fd_ = other.stdout_fd_;
    reaped_ = other.reaped_;
    other.pid_ = -1;
    other.stdin_fd_ = other.stdout_fd_ = -1;
    other.reaped_ = false;
  }
  return *this;
}

void Child::Reset() {
  if (stdin_fd_ >= 0) close(stdin_fd_);
  if (stdout_fd_ >= 0) close(stdout_fd_);
  stdin_fd_ = stdout_fd_ = -1;
}

bool Child::Spawn(const SpawnOptions& options, std::string* error) {
  int in[2] = {-1, -1}, out[2] = {-1, -1};
  if (options.pipe_stdin && pipe2(in, O_CLOEXEC) != 0) {
    *error = std::string("pipe: ") + std::strerror(errno);
    return false;
  }
  if (options.pipe_stdout && pipe2(out, O_CLOEXEC) != 0) {
    *error = std::string("pipe: ") + std::strerror(errno);
    return false;
  }
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  if (options.pipe_stdin) {
    posix_spawn_file_actions_adddup2(&actions, in[0], 0);
  } else {
    posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  }
  if (options.pipe_stdout) {
    posix_spawn_file_actions_adddup2(&actions, out[1], 1);
  } else {
    posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0);
  }
  if (options.stderr_path.empty()) {
    posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0);
  } else {
    posix_spawn_file_actions_addopen(&actions, 2, options.stderr_path.c_str(),
                                     O_WRONLY | O_CREAT | O_APPEND, 0600);
  }
  std::vector<char*> argv, envp;
  for (const std::string& a : options.argv) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  for (const std::string& e : options.env) envp.push_back(const_cast<char*>(e.c_str()));
  envp.push_back(nullptr);

  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  // The driver ignores SIGPIPE; children must start with the default disposition.
  sigset_t defaults;
  sigemptyset(&defaults);
  sigaddset(&defaults, SIGPIPE);
  posix_spawnattr_setsigdefault(&attr, &defaults);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGDEF);

  const int rc = posix_spawn(&pid_, argv[0], &actions, &attr, argv.data(), envp.data());
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attr);
  if (options.pipe_stdin) close(in[0]);
  if (options.pipe_stdout) close(out[1]);
  if (rc != 0) {
    if (options.pipe_stdin) close(in[1]);
    if (options.pipe_stdout) close(out[0]);
    pid_ = -1;
    *error = "start " + options.argv[0] + ": " + std::strerror(rc);
    return false;
  }
  stdin_fd_ = options.pipe_stdin ? in[1] : -1;
  stdout_fd_ = options.pipe_stdout ? out[0] : -1;
  reaped_ = false;
  return true;
}

void Child::CloseStdin() {
  if (stdin_fd_ >= 0) close(stdin_fd_);
  stdin_fd_ = -1;
}

int Child::Wait(int timeout_ms) {
  if (pid_ <= 0) return -1;
  const int64_t deadline = NowNs() + static_cast<int64_t>(timeout_ms) * 1000000;
  for (;;) {
    int status = 0;
    const pid_t r = waitpid(pid_, &status, timeout_ms < 0 ? 0 : WNOHANG);
    if (r == pid_) {
      reaped_ = true;
      pid_ = -1;
      if (WIFEXITED(status)) return WEXITSTATUS(status);
      if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
      return -1;
    }
    if (r < 0 && errno != EINTR) return -1;
    if (timeout_ms >= 0 && NowNs() >= deadline) return -1;
    usleep(200);
  }
}

void Child::Stop(int grace_ms) {
  if (pid_ <= 0 || reaped_) return;
  const pid_t pid = pid_;
  kill(pid, grace_ms > 0 ? SIGTERM : SIGKILL);
  if (grace_ms > 0 && Wait(grace_ms) != -1) return;
  if (pid_ > 0) {
    kill(pid, SIGKILL);
    Wait(-1);
  }
}

long long ProcStatusBytes(pid_t pid, const char* field) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  const std::string key = std::string(field) + ":";
  while (std::getline(in, line)) {
    if (line.compare(0, key.size(), key) == 0) {
      std::istringstream rest(line.substr(key.size()));
      long long kb = -1;
      rest >> kb;
      return kb < 0 ? -1 : kb * 1024;
    }
  }
  return -1;
}

bool ResetPeakRss(pid_t pid) {
  std::ofstream out("/proc/" + std::to_string(pid) + "/clear_refs");
  if (!out) return false;
  out << "5";
  out.flush();
  return static_cast<bool>(out);
}

bool WriteAll(int fd, const char* data, size_t size) {
  while (size > 0) {
    const ssize_t n = write(fd, data, size);
    if (n < 0) {
      if (errno == EINTR) continue;
      return false;
    }
    data += n;
    size -= static_cast<size_t>(n);
  }
  return true;
}

std::vector<std::string> CurrentEnvironment(const std::vector<std::string>& drop_prefixes) {
  std::vector<std::string> out;
  for (char** e = environ; *e != nullptr; ++e) {
    const std::string entry = *e;
    bool dropped = false;
    for (const std::string& prefix : drop_prefixes) {
      if (entry.compare(0, prefix.size(), prefix) == 0) dropped = true;
    }
    if (!dropped) out.push_back(entry);
  }
  return out;
}

}  // namespace abx::bench
