#pragma once

// The commands of one sandbox: starting them, the thread that owns each process
// ("pump": reads its output, enforces its timeout, reaps it), their status, background
// logs, interrupts, and freezing/killing them all when the sandbox is paused or removed.
//
// A foreground command's output is framed into events by its pump and handed to the
// HTTP stream through an EventPipe; the command outlives the stream (execd runs it under
// a background context, so a client disconnect does not kill it). A background command
// writes stdout and stderr straight into one log file, read back by byte cursor.

#include <sys/types.h>

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "tests/fake-opensandbox/event_pipe.h"
#include "tests/fake-opensandbox/sandbox_volumes.h"
#include "tests/fake-opensandbox/server_clock.h"

namespace fake_opensandbox {

struct CommandSpec {
  std::string command;
  std::string host_cwd;
  std::string sandbox_root;  // host directory of the sandbox (see SpawnOptions::chroot_dir)
  std::string sandbox_cwd;   // the working directory as the sandbox sees it
  std::vector<VolumeMount> mounts;  // the sandbox's volumes
  std::vector<std::pair<std::string, std::string>> envs;
  std::optional<uint32_t> uid;
  std::optional<uint32_t> gid;
  int64_t timeout_ms = 0;  // 0 = no limit
  bool background = false;
};

struct CommandStatus {
  bool running = true;
  std::optional<int> exit_code;
  std::string error;
  TimePoint started_at;
  std::optional<TimePoint> finished_at;
};

class Command {
 public:
  Command(std::string id, std::string content, bool background, TimePoint started_at);

  const std::string& id() const { return id_; }
  const std::string& content() const { return content_; }
  bool background() const { return background_; }
  const std::string& log_path() const { return log_path_; }
  // Foreground only: the encoded events for the HTTP stream.
  EventPipe& events() { return events_; }
  // Set when the process could not be started (the text upstream puts in evalue).
  const std::string& start_error() const { return start_error_; }

  CommandStatus Status() const;
  // True once the process has been reaped (before `until`).
  bool WaitFinished(std::chrono::steady_clock::time_point until) const;

 private:
  friend class CommandRegistry;
  friend struct PumpAccess;
  void Finish(std::optional<int> exit_code, std::string error, TimePoint finished_at);

  const std::string id_;
  const std::string content_;
  const bool background_;
  std::string log_path_;
  std::string start_error_;
  pid_t pgid_ = -1;
  std::chrono::steady_clock::time_point known_from_{};  // Find() answers for it from then on
  EventPipe events_;

  mutable std::mutex mutex_;
  mutable std::condition_variable finished_cv_;
  CommandStatus status_;
};

// How long after its `init` event a background command is still unknown to the status,
// logs and interrupt routes (see CommandRegistry::Start).
inline constexpr std::chrono::milliseconds kBackgroundRecordDelay{20};

class CommandRegistry {
 public:
  // `log_dir` holds background logs (outside the sandbox root, so it can't be seen or
  // deleted from inside). `keep_blank_lines` selects execd >= 1.0.17 framing,
  // `interrupt_kills_group` execd >= 1.0.18 interrupts (ExecdRelease).
  CommandRegistry(ServerClock clock, bool keep_blank_lines, bool interrupt_kills_group, std::string log_dir);
  ~CommandRegistry();

  // Starts the command. A process that fails to start still yields a Command (with
  // start_error set, already finished), as upstream answers 200 + init + error.
  std::shared_ptr<Command> Start(const CommandSpec& spec);
  std::shared_ptr<Command> Find(const std::string& id) const;

  enum class InterruptResult { kInterrupted, kUnknown, kNotRunning };
  // SIGTERM to the group (before 1.0.18: to the leader alone), up to 3 s, then SIGKILL;
  // returns once the process is gone.
  InterruptResult Interrupt(const std::string& id);

  // Sends `sig` to the process group of every running command (SIGSTOP/SIGCONT for
  // pause/resume, SIGKILL at teardown).
  void SignalAll(int sig);

 private:
  const ServerClock clock_;
  const bool keep_blank_lines_;
  const bool interrupt_kills_group_;
  const std::string log_dir_;
  mutable std::mutex mutex_;
  std::map<std::string, std::shared_ptr<Command>> commands_;
};

}  // namespace fake_opensandbox
