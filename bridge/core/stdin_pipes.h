#pragma once
// The stdin pipes of commands started with `stdin_stream` (stdin_pipe_script.h), shared by
// every session with one server and credential (they live in its EndpointCache), so that
// process.stdin from any session reaches the command. Each pipe has a line of writes
// (a RunQueue: writes enter it in the order their requests arrived and go out one at a
// time, so bytes reach the command in call order) and a state the command's stream sets:
// its holder's pid once the wrapper names it, then its end. A pipe whose command ended is
// kept a while (the newest kMaxEnded), so that a late write is told the command has
// exited rather than that it never existed.

#include <condition_variable>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "bridge/base/cancel.h"
#include "bridge/base/error.h"
#include "bridge/core/run_queue.h"

namespace abx::core {

class StdinPipes {
 public:
  static constexpr size_t kMaxEnded = 4096;

  // What a write finds.
  struct State {
    int holder_pid = 0;    // 0: not named yet
    std::string failure;   // why there is no pipe, when the wrapper could not make one
    bool closed = false;   // end of file was written
    bool ended = false;    // the command ended (or its stream broke off)
  };

  // A command with a stdin stream, as execd named it.
  void Add(const std::string& sandbox_id, const std::string& exec_id);
  // The wrapper named its holder / said something else first.
  void SetHolder(const std::string& exec_id, int pid);
  void SetFailed(const std::string& exec_id, std::string why);
  // End of file was written: later writes are refused.
  void SetClosed(const std::string& exec_id);
  // The command's stream is over.
  void SetEnded(const std::string& exec_id);

  // Whether the pipe of `exec_id` has its holder and is neither closed nor ended: what
  // the lease's pings ask before each ping.
  bool Open(const std::string& exec_id);

  // The line of writes to the pipe of `exec_id` in `sandbox_id`; null when there is none.
  std::shared_ptr<RunQueue> Queue(const std::string& sandbox_id, const std::string& exec_id);
  // Waits until the holder is named, the pipe failed, or the command ended, at most until
  // `deadline_ms` (NowMillis) and while `cancel` allows; then the state. E8005 for a pipe
  // it does not know, E8009 on cancel, E8002 when the wrapper never named its holder.
  Result<State> AwaitHolder(const std::string& sandbox_id, const std::string& exec_id,
                            int64_t deadline_ms, CancelToken* cancel);

 private:
  struct Pipe {
    std::string sandbox_id;
    std::shared_ptr<RunQueue> queue = std::make_shared<RunQueue>("command's stdin", "process.stdin");
    State state;
  };
  std::shared_ptr<Pipe> FindLocked(const std::string& sandbox_id, const std::string& exec_id);

  // The lock and its signal, shared with the cancel hooks of waiting writes, which may run
  // after this registry is gone.
  struct Signal {
    std::mutex mu;
    std::condition_variable changed;
  };
  std::shared_ptr<Signal> signal_ = std::make_shared<Signal>();
  std::mutex& mu_ = signal_->mu;
  std::condition_variable& changed_ = signal_->changed;
  std::map<std::string, std::shared_ptr<Pipe>> pipes_;  // by exec_id
  std::deque<std::string> ended_;                      // exec_ids of ended pipes, oldest first
};

}  // namespace abx::core
