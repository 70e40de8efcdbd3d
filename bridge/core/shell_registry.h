#pragma once
// What the bridge keeps of the shells of one server's sandboxes, shared by every session
// with that server and credential (it lives in their EndpointCache): the line of
// commands of each shell, and each shell command that runs now, so that process.kill
// with its exec_id from any session can end it.

#include <condition_variable>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "bridge/base/cancel.h"
#include "bridge/core/run_queue.h"

namespace abx::core {

// How one shell command is being ended, shared by whoever may end it (its request's
// cancel, its timeout, process.kill) and the run itself.
class ShellRunStop {
 public:
  enum class Why { kNone, kCancelled, kTimedOut, kKilled };

  // Asks the run to end; false when it has ended or is already being ended.
  bool Stop(Why why);
  // Cancelled by Stop: drops the run's request.
  CancelToken* abort() { return &abort_; }
  // The run's stream is over: later Stops do nothing. Why it was stopped, if it was.
  Why Seal();
  // The run's processes are gone too: Kill may answer.
  void MarkOver();
  // Waits for MarkOver at most `timeout_ms`; false when the run still goes on.
  bool WaitOver(int64_t timeout_ms);

 private:
  CancelToken abort_;
  mutable std::mutex mu_;
  std::condition_variable over_cv_;
  Why why_ = Why::kNone;
  bool sealed_ = false;
  bool over_ = false;
};

class ShellRegistry {
 public:
  // The line of commands of a shell, made on first use.
  std::shared_ptr<RunQueue> Queue(const std::string& sandbox_id, const std::string& shell_id);
  // The shell is closed: its line goes.
  void ForgetShell(const std::string& sandbox_id, const std::string& shell_id);

  void AddRun(const std::string& sandbox_id, const std::string& exec_id, const std::string& shell_id,
              std::shared_ptr<ShellRunStop> run);
  void RemoveRun(const std::string& sandbox_id, const std::string& exec_id);
  // Ends the shell command `exec_id` (process.kill): false when no such command runs or
  // it is ending already.
  // Returns once its processes are gone, or after `timeout_ms`.
  bool KillRun(const std::string& sandbox_id, const std::string& exec_id, int64_t timeout_ms);
  // The same for the command running in shell `shell_id`, if one does (shell.close:
  // execd kills only bash, and the run's stream stays open while what bash started
  // runs on).
  void KillRunsOf(const std::string& sandbox_id, const std::string& shell_id, int64_t timeout_ms);
  // Whether the shell command `exec_id` runs now.
  bool Running(const std::string& sandbox_id, const std::string& exec_id) const;

 private:
  mutable std::mutex mu_;
  std::map<std::string, std::shared_ptr<RunQueue>> queues_;    // sandbox id + "\n" + shell id
  struct Run {
    std::string shell_id;
    std::shared_ptr<ShellRunStop> stop;
  };
  std::map<std::string, Run> runs_;  // sandbox id + "\n" + exec id
};

}  // namespace abx::core
