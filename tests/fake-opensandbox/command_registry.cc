#include "tests/fake-opensandbox/command_registry.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <thread>

#include "tests/fake-opensandbox/child_process.h"
#include "tests/fake-opensandbox/ids.h"
#include "tests/fake-opensandbox/line_framer.h"
#include "tests/fake-opensandbox/sse_events.h"

namespace fake_opensandbox {

using SteadyClock = std::chrono::steady_clock;

struct PumpAccess {
  static void Finish(Command& command, std::optional<int> exit_code, std::string error,
                     TimePoint at) {
    command.Finish(exit_code, std::move(error), at);
  }
};

namespace {

constexpr size_t kReadBufferBytes = 1 << 20;
// Bytes read from one pipe before looking at the other one and at the clock again.
constexpr size_t kMaxReadPerRound = 8 << 20;

// Returns true once `pid` has been reaped, storing its wait status.
bool TryReap(pid_t pid, int* wait_status) {
  for (;;) {
    pid_t r = waitpid(pid, wait_status, WNOHANG);
    if (r == pid) return true;
    if (r < 0 && errno == EINTR) continue;
    if (r < 0 && errno == ECHILD) {  // reaped elsewhere (should not happen); treat as killed
      *wait_status = SIGKILL;
      return true;
    }
    return false;
  }
}

int PollTimeoutMs(const std::optional<SteadyClock::time_point>& deadline, bool have_pidfd) {
  int timeout = -1;
  if (deadline) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(*deadline -
                                                                     SteadyClock::now());
    timeout = left.count() < 0 ? 0 : static_cast<int>(left.count()) + 1;
  }
  if (!have_pidfd && (timeout < 0 || timeout > 50)) timeout = 50;  // fall back to polling
  return timeout;
}

std::optional<int> ExitCodeOf(int wait_status) {
  if (WIFEXITED(wait_status)) return WEXITSTATUS(wait_status);
  return -1;  // signals are reported as -1, like execd
}

// Owns a foreground process: frames its output into events, enforces the timeout,
// reaps it and sends the one terminal event.
void RunForegroundPump(std::shared_ptr<Command> command, SpawnedProcess process,
                       int64_t timeout_ms, bool keep_blank_lines, ServerClock clock) {
  const auto started = SteadyClock::now();
  std::optional<SteadyClock::time_point> deadline;
  if (timeout_ms > 0) deadline = started + std::chrono::milliseconds(timeout_ms);
  LineFramer framers[2] = {LineFramer(keep_blank_lines), LineFramer(keep_blank_lines)};
  int fds[2] = {process.stdout_fd, process.stderr_fd};
  std::unique_ptr<char[]> buffer(new char[kReadBufferBytes]);
  std::string batch;
  EventPipe& pipe = command->events();

  auto drain = [&](int index, int64_t timestamp) {
    OutputEventWriter writer(timestamp);
    size_t total = 0;
    while (fds[index] >= 0 && total < kMaxReadPerRound) {
      ssize_t n = read(fds[index], buffer.get(), kReadBufferBytes);
      if (n > 0) {
        total += static_cast<size_t>(n);
        framers[index].Feed(buffer.get(), static_cast<size_t>(n), [&](std::string_view line) {
          writer.Append(&batch, index == 1, line);
        });
        continue;
      }
      if (n < 0 && errno == EINTR) continue;
      if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) break;
      // EOF or a read error: this stream is over.
      framers[index].Finish(
          [&](std::string_view line) { AppendOutputEvent(&batch, index == 1, line, timestamp); });
      close(fds[index]);
      fds[index] = -1;
    }
  };

  bool killed = false;
  int wait_status = 0;
  for (;;) {
    pollfd pfds[3];
    int count = 0;
    int pipe_slot[2] = {-1, -1};
    for (int i = 0; i < 2; ++i) {
      if (fds[i] < 0) continue;
      pipe_slot[i] = count;
      pfds[count++] = {fds[i], POLLIN, 0};
    }
    int pid_slot = -1;
    if (process.pidfd >= 0) {
      pid_slot = count;
      pfds[count++] = {process.pidfd, POLLIN, 0};
    }
    int ready = poll(pfds, static_cast<nfds_t>(count), PollTimeoutMs(killed ? std::nullopt : deadline,
                                                                     process.pidfd >= 0));
    if (ready < 0 && errno != EINTR) break;
    int64_t now_ms = clock.NowUnixMillis();
    for (int i = 0; i < 2; ++i) {
      if (pipe_slot[i] >= 0 && pfds[pipe_slot[i]].revents != 0) drain(i, now_ms);
    }
    if (!batch.empty()) {
      pipe.Append(batch);
      // Backpressure: wait for the client, but never past the command's deadline.
      while (!pipe.WaitForRoom(deadline && !killed ? *deadline
                                                   : SteadyClock::now() + std::chrono::hours(1))) {
        if (deadline && !killed && SteadyClock::now() >= *deadline) {
          kill(-process.pid, SIGKILL);
          killed = true;
          break;
        }
      }
    }
    if (deadline && !killed && SteadyClock::now() >= *deadline) {
      kill(-process.pid, SIGKILL);
      killed = true;
    }
    bool maybe_exited = pid_slot < 0 || pfds[pid_slot].revents != 0;
    if (maybe_exited && TryReap(process.pid, &wait_status)) break;
  }

  // The process is gone: take what is left in the pipes (descendants may still hold
  // them open, so read only what is there), then the held partial lines.
  int64_t now_ms = clock.NowUnixMillis();
  for (int i = 0; i < 2; ++i) {
    drain(i, now_ms);
    framers[i].Finish([&](std::string_view line) { AppendOutputEvent(&batch, i == 1, line, now_ms); });
    if (fds[i] >= 0) close(fds[i]);
  }
  if (process.pidfd >= 0) close(process.pidfd);

  auto elapsed_ms = std::chrono::duration_cast<std::chrono::milliseconds>(SteadyClock::now() -
                                                                         started).count();
  std::string description = DescribeWaitStatus(wait_status);
  std::optional<int> exit_code = ExitCodeOf(wait_status);
  if (*exit_code == 0) {
    AppendCompleteEvent(&batch, elapsed_ms, now_ms);
    description.clear();
  } else {
    AppendErrorEvent(&batch, std::to_string(*exit_code), description, now_ms);
  }
  // Status first, so a client that saw the terminal event finds the command finished.
  PumpAccess::Finish(*command, exit_code, description, clock.Now());
  pipe.Append(batch);
  pipe.Close();
}

// Owns a background process: only the timeout and the reaping (output goes to the log).
void RunBackgroundPump(std::shared_ptr<Command> command, SpawnedProcess process,
                       int64_t timeout_ms, ServerClock clock) {
  std::optional<SteadyClock::time_point> deadline;
  if (timeout_ms > 0) deadline = SteadyClock::now() + std::chrono::milliseconds(timeout_ms);
  bool killed = false;
  int wait_status = 0;
  for (;;) {
    if (process.pidfd < 0 && !deadline) {
      while (waitpid(process.pid, &wait_status, 0) < 0 && errno == EINTR) {
      }
      break;
    }
    pollfd pfd = {process.pidfd, POLLIN, 0};
    int count = process.pidfd >= 0 ? 1 : 0;
    poll(&pfd, static_cast<nfds_t>(count), PollTimeoutMs(killed ? std::nullopt : deadline,
                                                         process.pidfd >= 0));
    if (deadline && !killed && SteadyClock::now() >= *deadline) {
      kill(-process.pid, SIGKILL);
      killed = true;
    }
    if (TryReap(process.pid, &wait_status)) break;
  }
  if (process.pidfd >= 0) close(process.pidfd);
  std::optional<int> exit_code = ExitCodeOf(wait_status);
  PumpAccess::Finish(*command, exit_code, *exit_code == 0 ? "" : DescribeWaitStatus(wait_status),
                     clock.Now());
}

bool GroupAlive(pid_t pgid) { return kill(-pgid, 0) == 0 || errno != ESRCH; }

}  // namespace

Command::Command(std::string id, std::string content, bool background, TimePoint started_at)
    : id_(std::move(id)), content_(std::move(content)), background_(background) {
  status_.started_at = started_at;
}

CommandStatus Command::Status() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return status_;
}

bool Command::WaitFinished(std::chrono::steady_clock::time_point until) const {
  std::unique_lock<std::mutex> lock(mutex_);
  return finished_cv_.wait_until(lock, until, [this] { return !status_.running; });
}

void Command::Finish(std::optional<int> exit_code, std::string error, TimePoint finished_at) {
  std::lock_guard<std::mutex> lock(mutex_);
  status_.running = false;
  status_.exit_code = exit_code;
  status_.error = std::move(error);
  status_.finished_at = finished_at;
  finished_cv_.notify_all();
}

CommandRegistry::CommandRegistry(ServerClock clock, bool keep_blank_lines, bool interrupt_kills_group,
                                 std::string log_dir)
    : clock_(clock),
      keep_blank_lines_(keep_blank_lines),
      interrupt_kills_group_(interrupt_kills_group),
      log_dir_(std::move(log_dir)) {}

CommandRegistry::~CommandRegistry() { SignalAll(SIGKILL); }

std::shared_ptr<Command> CommandRegistry::Start(const CommandSpec& spec) {
  auto command = std::make_shared<Command>(NewUuid4Hex(), spec.command, spec.background,
                                           clock_.Now());
  SpawnOptions options;
  options.command = spec.command;
  options.host_cwd = spec.host_cwd;
  options.chroot_dir = spec.sandbox_root;
  options.chroot_cwd = spec.sandbox_cwd;
  options.mounts = spec.mounts;
  options.env = MergedEnvironment(spec.envs);
  options.uid = spec.uid;
  options.gid = spec.gid;
  int log_fd = -1;
  if (spec.background) {
    command->log_path_ = log_dir_ + "/" + command->id() + ".log";
    log_fd = open(command->log_path_.c_str(), O_CREAT | O_WRONLY | O_APPEND | O_CLOEXEC, 0600);
    options.combined_output_fd = log_fd;
  }
  SpawnedProcess process;
  std::string error;
  bool started = (!spec.background || log_fd >= 0) && SpawnShell(options, &process, &error);
  if (spec.background && log_fd < 0) error = std::string("open command log: ") + strerror(errno);
  if (log_fd >= 0) close(log_fd);
  // Every field is set before the command becomes visible to other threads.
  if (started) {
    command->pgid_ = process.pid;
  } else {
    command->start_error_ = error;
    command->Finish(255, error, clock_.Now());
    std::string batch;
    AppendErrorEvent(&batch, error, error, clock_.NowUnixMillis());
    command->events().Append(batch);
    command->events().Close();
  }
  // execd announces a background command (its `init` event) before it records it: the
  // record is made by a goroutine started after the process (runBackgroundCommand, every
  // release), so a status, logs or interrupt call that comes first is a 404. Here that
  // window is a fixed few milliseconds, so a client that relies on it fails every time.
  if (spec.background && started) {
    command->known_from_ = std::chrono::steady_clock::now() + kBackgroundRecordDelay;
  }
  {
    std::lock_guard<std::mutex> lock(mutex_);
    commands_[command->id()] = command;
  }
  if (!started) return command;
  if (spec.background) {
    std::thread(RunBackgroundPump, command, process, spec.timeout_ms, clock_).detach();
  } else {
    std::thread(RunForegroundPump, command, process, spec.timeout_ms, keep_blank_lines_, clock_)
        .detach();
  }
  return command;
}

std::shared_ptr<Command> CommandRegistry::Find(const std::string& id) const {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = commands_.find(id);
  if (it == commands_.end() || std::chrono::steady_clock::now() < it->second->known_from_) return nullptr;
  return it->second;
}

CommandRegistry::InterruptResult CommandRegistry::Interrupt(const std::string& id) {
  std::shared_ptr<Command> command = Find(id);
  if (!command) return InterruptResult::kUnknown;
  if (!command->Status().running) return InterruptResult::kNotRunning;
  pid_t pgid = command->pgid_;
  // The leader's pid is its group's id (Setpgid). Before 1.0.18 execd signals the leader
  // alone (os.Process.Signal) and answers once it is reaped.
  const pid_t target = interrupt_kills_group_ ? -pgid : pgid;
  kill(target, SIGTERM);
  kill(target, SIGCONT);  // a stopped process only acts on SIGTERM once continued
  if (!command->WaitFinished(SteadyClock::now() + std::chrono::seconds(3))) {
    kill(target, SIGKILL);
    command->WaitFinished(SteadyClock::now() + std::chrono::seconds(5));
  }
  if (!interrupt_kills_group_) return InterruptResult::kInterrupted;
  // The leader is reaped; give the rest of its group a moment to go too.
  auto until = SteadyClock::now() + std::chrono::seconds(1);
  while (GroupAlive(pgid) && SteadyClock::now() < until) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  if (GroupAlive(pgid)) kill(-pgid, SIGKILL);
  return InterruptResult::kInterrupted;
}

void CommandRegistry::SignalAll(int sig) {
  std::lock_guard<std::mutex> lock(mutex_);
  for (const auto& [id, command] : commands_) {
    if (command->pgid_ > 0 && command->Status().running) kill(-command->pgid_, sig);
  }
}

}  // namespace fake_opensandbox
