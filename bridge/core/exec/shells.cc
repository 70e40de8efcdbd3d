#include "bridge/core/exec/shells.h"

#include <chrono>
#include <condition_variable>
#include <future>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>

#include "bridge/base/log.h"
#include "bridge/base/time_util.h"
#include "bridge/core/bridge_core.h"
#include "bridge/core/exec/output_assembler.h"
#include "bridge/core/exec/sandbox_script.h"
#include "bridge/core/exec/shell_script.h"
#include "bridge/core/random_hex.h"

namespace abx::core {
namespace {

using Why = ShellRunStop::Why;

// execd pings every 3 s while a run goes on; this much silence means it is gone.
constexpr int64_t kStreamIdleTimeoutMs = 20000;

// Stops the run with kTimedOut at its deadline, unless destroyed first.
class DeadlineTimer {
 public:
  DeadlineTimer(int64_t deadline_ms, std::shared_ptr<ShellRunStop> stop) {
    thread_ = std::thread([this, deadline_ms, stop] {
      std::unique_lock<std::mutex> lock(mu_);
      while (!done_) {
        const int64_t left = deadline_ms - NowMillis();
        if (left <= 0) {
          lock.unlock();
          stop->Stop(Why::kTimedOut);
          return;
        }
        cv_.wait_for(lock, std::chrono::milliseconds(left));
      }
    });
  }
  ~DeadlineTimer() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      done_ = true;
    }
    cv_.notify_all();
    thread_.join();
  }
  DeadlineTimer(const DeadlineTimer&) = delete;
  DeadlineTimer& operator=(const DeadlineTimer&) = delete;

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  bool done_ = false;
  std::thread thread_;
};

bool ParseExitCode(const std::string& text, int* out) {
  if (text.empty() || text.size() > 3) return false;
  int v = 0;
  for (char c : text) {
    if (c < '0' || c > '9') return false;
    v = v * 10 + (c - '0');
  }
  *out = v;
  return true;
}

// Ends the run's bash and every process its command started (shell_script.h). Not
// cancellable: it is what a cancel does; bounded by its timeout.
void EndRunProcesses(opensandbox::ExecdClient& execd, const std::optional<ShellRunHeader>& header,
                     const std::string& tag, const std::string& exec_id) {
  CancelToken uncancellable;
  int code = 0;
  auto ended = RunSandboxScript(execd, KillShellRunScript(header, tag), &code, &uncancellable);
  if (!ended.ok()) log::Warn("shell.end_processes_failed", {{"exec_id", exec_id}, {"error", ended.error().message}});
}

constexpr char kExecIdPrefix[] = "shell-";

}  // namespace

bool IsShellExecId(const std::string& exec_id) { return exec_id.rfind(kExecIdPrefix, 0) == 0; }

Result<std::string> Shells::Create(const std::string& sandbox_id, const std::string& cwd, CancelToken* cancel) {
  ABX_ASSIGN_OR_RETURN(opensandbox::ExecdClient execd, upstream_->Execd(sandbox_id, *config_, cancel));
  return execd.CreateSession(cwd, cancel);
}

Result<bool> Shells::Close(const std::string& sandbox_id, const std::string& shell_id, CancelToken* cancel) {
  ABX_ASSIGN_OR_RETURN(opensandbox::ExecdClient execd, upstream_->Execd(sandbox_id, *config_, cancel));
  // execd kills the bash of a command running in it, but keeps its stream open while
  // what that bash started runs on: the bridge ends such a command as process.kill does.
  // Commands still waiting for their turn then find the shell gone (E8005).
  ABX_ASSIGN_OR_RETURN(bool closed, execd.DeleteSession(shell_id, cancel));
  upstream_->shells().KillRunsOf(sandbox_id, shell_id, static_cast<int64_t>(config_->request_timeout_s * 1000));
  upstream_->shells().ForgetShell(sandbox_id, shell_id);
  return closed;
}

Status Shells::Run(const ExecSpec& spec, CancelToken* cancel, ExecSink* sink) {
  const int64_t deadline = spec.timeout_s ? NowMillis() + static_cast<int64_t>(*spec.timeout_s * 1000) : 0;
  // The place in line first, before anything that talks to the server: commands that
  // arrive one after the other keep that order.
  std::shared_ptr<RunQueue> queue = upstream_->shells().Queue(spec.sandbox_id, spec.shell_id);
  {
    ABX_ASSIGN_OR_RETURN(std::shared_ptr<RunPlace> place, PlaceIn(queue, spec.place));
    Status st = place->Enter(deadline, cancel);
    if (!st.ok()) return st.error();
  }
  struct Turn {
    RunQueue* queue;
    ~Turn() { queue->Leave(); }
  } turn{queue.get()};
  ABX_ASSIGN_OR_RETURN(opensandbox::ExecdClient execd, upstream_->Execd(spec.sandbox_id, *config_, cancel));
  if (cancel->cancelled()) return MakeError(ErrorCode::kCancelled, "the shell command was cancelled before it ran");
  if (deadline > 0 && NowMillis() >= deadline) {
    return MakeError(ErrorCode::kTimeout,
                     "the shell command timed out before its turn came (its timeout counts from arrival)");
  }

  const std::string tag = RandomHex(16);
  const std::string exec_id = kExecIdPrefix + tag;
  auto stop = std::make_shared<ShellRunStop>();
  cancel->OnCancel([stop] { stop->Stop(Why::kCancelled); });
  std::unique_ptr<DeadlineTimer> timer;
  if (deadline > 0) timer = std::make_unique<DeadlineTimer>(deadline, stop);

  BridgeCore::StreamLease lease(core_);
  OutputAssembler assembler;
  bool started = false, ended = false;
  std::optional<ShellRunHeader> header;
  // execd's script file of the run (shell_script.h) goes as soon as the header names it,
  // off this thread while the command runs; the command's end waits for that.
  struct ScriptRemoval {
    std::future<void> done;
    void Await() {
      if (done.valid()) done.wait_for(std::chrono::seconds(30));  // bounded by request_timeout
      done = {};
    }
    ~ScriptRemoval() { Await(); }
  } script_removal;
  auto remove_script = [&](const std::string& script) {
    auto finished = std::make_shared<std::promise<void>>();
    script_removal.done = finished->get_future();
    core_->RunInBackground([execd, script, finished]() mutable {
      CancelToken uncancellable;  // bounded by request_timeout
      Status removed = execd.RemoveFile(script, &uncancellable);
      if (!removed.ok()) log::Warn("shell.script_left", {{"error", removed.error().message}});
      finished->set_value();
    });
  };
  ExecExit exit;
  std::string refusal;  // execd's bare error object, when it ended the stream with one
  auto flush = [&] {
    for (OutputChunk& chunk : assembler.Take()) {
      sink->OnOutput(chunk);
      assembler.Recycle(std::move(chunk.data));
    }
  };
  Status st = execd.RunInSession(
      spec.shell_id, opensandbox::SessionRunBody(ShellRunScript(tag, spec.command, spec.cwd)), stop->abort(),
      kStreamIdleTimeoutMs,
      [&](const opensandbox::ExecdEvent& e) {
        if (e.kind == opensandbox::ExecdEventKind::kUntyped) {
          refusal = e.message.empty() ? e.code : e.message;
          return false;
        }
        if (e.type == "init") {
          if (started) return true;
          started = true;
          upstream_->RememberExec(spec.sandbox_id, tag, exec_id);
          upstream_->shells().AddRun(spec.sandbox_id, exec_id, spec.shell_id, stop);
          sink->OnStarted(exec_id);
        } else if (e.type == "stdout" || e.type == "stderr") {
          // The header is the script's first line, but a line of execd's own (or stderr
          // read apart) may come before it: every line is looked at until it came.
          if (!header) {
            header = ParseShellRunHeader(e.text);
            if (header) {
              if (!header->script.empty()) remove_script(header->script);
              return true;
            }
          }
          // One event per line, its terminator removed: it comes back.
          const OutputStream stream = e.type == "stdout" ? OutputStream::kStdout : OutputStream::kStderr;
          assembler.AddRaw(stream, e.text);
          assembler.AddRaw(stream, "\n");
        } else if (e.type == "execution_complete") {
          ended = true;
          exit.exit_code = 0;
          return false;
        } else if (e.type == "error") {
          ended = true;
          int code = 0;
          const std::string& value = e.error_value();
          if (value == "-1") {
            exit.signal = "SIGKILL";  // execd killed bash: the shell was closed
          } else if (ParseExitCode(value, &code)) {
            exit.exit_code = code;
          } else {
            exit.error = MakeError(ErrorCode::kUpstream, "the shell command did not start: " + value);
          }
          return false;
        }
        return true;
      },
      flush);
  timer.reset();
  const Why why = stop->Seal();
  flush();
  // Unless bash itself reported how the command ended, something ended it from outside
  // (this stop, the shell's close, a broken stream): what the command started may still
  // run, and nothing else would end it.
  // A stop before execd's init may still have come after execd started the script.
  const bool ended_by_itself = ended && (exit.exit_code || exit.error);
  if ((started && !ended_by_itself) || (!started && why != Why::kNone)) {
    EndRunProcesses(execd, header, tag, exec_id);
  }
  upstream_->ForgetExec(spec.sandbox_id, tag);
  upstream_->shells().RemoveRun(spec.sandbox_id, exec_id);
  stop->MarkOver();

  if (!started) {
    if (why == Why::kCancelled) return MakeError(ErrorCode::kCancelled, "the shell command was cancelled");
    if (why == Why::kTimedOut) return MakeError(ErrorCode::kTimeout, "the shell command timed out before it started");
    if (!st.ok()) return st.error();
    return MakeError(ErrorCode::kUpstream, "run in shell: execd's stream held no init event");
  }
  if (!ended_by_itself) {
    exit.exit_code.reset();
    if (why != Why::kNone) {
      exit.signal = "SIGKILL";
      exit.error.reset();
      exit.cancelled = why == Why::kCancelled;
      exit.timed_out = why == Why::kTimedOut;
    } else if (!refusal.empty()) {
      exit.error = MakeError(ErrorCode::kUpstream, "execd ended shell command " + exec_id + ": " + refusal);
    } else if (!ended) {
      Error broke = st.ok() ? MakeError(ErrorCode::kUnreachable,
                                        "execd closed the output stream before the command ended")
                            : st.error();
      exit.error = broke.Within("shell command " + exec_id);
    }
  }
  script_removal.Await();  // the file is gone before the host learns the command ended
  sink->OnExit(exit);
  return OkStatus();
}

}  // namespace abx::core
