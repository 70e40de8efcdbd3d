#pragma once
// Child processes of the benchmark: the fake server, shims, node. Spawned with
// posix_spawn (vfork-like, so the cost the benchmark adds to a process start is the same
// for ours and for the baselines), each with its own environment.

#include <sys/types.h>

#include <string>
#include <vector>

namespace abx::bench {

struct SpawnOptions {
  std::vector<std::string> argv;
  std::vector<std::string> env;  // the child's whole environment, "KEY=value"
  bool pipe_stdin = false;       // else /dev/null
  bool pipe_stdout = false;      // else /dev/null
  std::string stderr_path;       // appended to; empty = /dev/null
};

class Child {
 public:
  Child() = default;
  ~Child();  // kills (SIGKILL) and reaps a child still running
  Child(const Child&) = delete;
  Child& operator=(const Child&) = delete;
  Child(Child&& other) noexcept;
  Child& operator=(Child&& other) noexcept;

  // False with `*error` when the program cannot be started.
  bool Spawn(const SpawnOptions& options, std::string* error);

  pid_t pid() const { return pid_; }
  int stdin_fd() const { return stdin_fd_; }
  int stdout_fd() const { return stdout_fd_; }
  void CloseStdin();

  // Waits up to `timeout_ms` for the child to exit; its exit code, 128+signal for a
  // signal, or -1 when it is still running then.
  int Wait(int timeout_ms);
  // SIGTERM, then SIGKILL after `grace_ms`; reaps it.
  void Stop(int grace_ms);

 private:
  void Reset();

  pid_t pid_ = -1;
  int stdin_fd_ = -1;
  int stdout_fd_ = -1;
  bool reaped_ = false;
};

// A field of /proc/<pid>/status in bytes ("VmRSS", "VmHWM"); -1 when unreadable.
long long ProcStatusBytes(pid_t pid, const char* field);

// Resets a process's peak RSS (VmHWM) to its current RSS (writes 5 to clear_refs).
bool ResetPeakRss(pid_t pid);

// Writes all of `data` to `fd`; false on error.
bool WriteAll(int fd, const char* data, size_t size);

// The environment of this process, minus every variable whose "NAME=value" starts with
// one of `drop_prefixes`.
std::vector<std::string> CurrentEnvironment(const std::vector<std::string>& drop_prefixes);

}  // namespace abx::bench
