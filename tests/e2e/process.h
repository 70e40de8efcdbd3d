#pragma once

// Child processes for the end-to-end tests: started with posix_spawn from an argv and an
// explicit environment (never through a shell), waited for with a timeout, and a few
// /proc and file helpers to see what the code under test left behind.

#include <sys/types.h>

#include <chrono>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

namespace abx::e2e {

using Clock = std::chrono::steady_clock;
using Millis = std::chrono::milliseconds;

struct ExitStatus {
  bool exited = false;  // ended normally (then `code` is valid)
  int code = 0;
  int signal = 0;       // the signal that ended it, when one did
  std::string ToString() const;  // "exit 0", "signal 9 (Killed)"
};

// A child process started with posix_spawn (no shell). SIGPIPE and every other signal
// get their default disposition in the child, whatever the test process set.
class Process {
 public:
  struct Options {
    std::vector<std::string> argv;  // argv[0] is an absolute path
    std::vector<std::string> env;   // "NAME=value" entries: the whole environment
    bool pipe_stdin = false;        // else /dev/null
    bool pipe_stdout = false;       // else `output_file`
    std::string output_file;        // stdout (when not piped) and stderr; /dev/null if empty
  };
  static std::unique_ptr<Process> Start(const Options& options, std::string* error);
  // Kills (SIGKILL) and reaps the child when it is still running.
  ~Process();
  Process(const Process&) = delete;
  Process& operator=(const Process&) = delete;

  pid_t pid() const { return pid_; }
  int stdin_fd() const { return stdin_fd_; }    // -1 when not piped or closed
  int stdout_fd() const { return stdout_fd_; }  // -1 when not piped
  void CloseStdin();
  // Waits for the child to end; nullopt when it is still running after `timeout`.
  std::optional<ExitStatus> WaitExit(Millis timeout);
  // The exit status once known (without waiting).
  std::optional<ExitStatus> exit_status();
  bool Signal(int signal_number);
  // SIGTERM, up to `grace` to end, then SIGKILL. Returns how it ended.
  ExitStatus Stop(Millis grace = Millis(3000));

 private:
  Process() = default;

  pid_t pid_ = -1;
  int stdin_fd_ = -1;
  int stdout_fd_ = -1;
  std::mutex mutex_;
  std::optional<ExitStatus> status_;
};

// Runs argv to its end (stdout and stderr together into `*output`), killing it after
// `timeout`. nullopt when it could not be started or had to be killed.
std::optional<ExitStatus> RunCommand(const std::vector<std::string>& argv,
                                     const std::vector<std::string>& env, Millis timeout,
                                     std::string* output);

// True while `pid` exists and is not a zombie.
bool ProcessAlive(pid_t pid);
// The NUL-separated argv of `pid` joined with spaces ("" when it is gone).
std::string ProcessCommandLine(pid_t pid);
// Live processes (not zombies) whose command line contains every one of `needles`.
std::vector<pid_t> FindProcesses(const std::vector<std::string>& needles);

// Whole contents of a file ("" when it cannot be read); the last `max_bytes` when given.
std::string ReadFile(const std::string& path, size_t max_bytes = 0);
bool FileExists(const std::string& path);
bool IsSocket(const std::string& path);

// Low-level I/O shared by the harness.
// Ignores SIGPIPE in the test process (once): writing to a dead child is EPIPE, not death.
void IgnoreSigpipe();
// Waits until `fd` is readable (or at EOF/error) or `timeout` passes; false on timeout.
bool WaitReadable(int fd, Millis timeout);
// Writes all bytes, retrying on EINTR and short writes; false on error.
bool WriteAll(int fd, const char* data, size_t size);

}  // namespace abx::e2e
