#include "bridge/core/exec/process_stdin.h"

#include "bridge/base/time_util.h"
#include "bridge/core/exec/shells.h"
#include "bridge/core/exec/stdin_pipe_script.h"

namespace abx::core {

Error ProcessStdin::NoPipe(const std::string& sandbox_id, const std::string& exec_id, CancelToken* cancel) {
  // A shell's command has an id of the bridge's own (shells.h), which execd does not know.
  if (IsShellExecId(exec_id)) {
    if (!upstream_->shells().Running(sandbox_id, exec_id)) {
      return MakeError(ErrorCode::kNotFound, "no command " + exec_id + " in sandbox " + sandbox_id);
    }
    return MakeError(ErrorCode::kInvalidState,
                     "command " + exec_id + " runs in a shell, which gives its commands no stdin");
  }
  auto execd = upstream_->Execd(sandbox_id, *config_, cancel);
  if (!execd.ok()) return execd.error();
  auto status = execd->GetStatus(exec_id, cancel);
  if (!status.ok()) {
    if (status.error().code == ErrorCode::kNotFound) {
      return MakeError(ErrorCode::kNotFound, "no command " + exec_id + " in sandbox " + sandbox_id);
    }
    return status.error();
  }
  return MakeError(ErrorCode::kInvalidState,
                   status->running ? "command " + exec_id + " was started without stdin_stream"
                                   : "command " + exec_id + " has exited");
}

Error ProcessStdin::Refused(const std::string& sandbox_id, const std::string& exec_id, Error error) {
  // The pipe goes with the command: a write that meets its end is told so, whatever
  // execd's words for the write it could not make.
  CancelToken none;
  auto execd = upstream_->Execd(sandbox_id, *config_, &none);
  if (execd.ok()) {
    auto status = execd->GetStatus(exec_id, &none);
    if (status.ok() && !status->running) {
      return MakeError(ErrorCode::kInvalidState, "command " + exec_id + " has exited");
    }
  }
  return error.Within("write to the stdin of command " + exec_id);
}

Result<int64_t> ProcessStdin::Write(const StdinWrite& write, std::shared_ptr<RunPlace> reserved,
                                    CancelToken* cancel) {
  StdinPipes& pipes = upstream_->stdin_pipes();
  std::shared_ptr<RunQueue> queue = pipes.Queue(write.sandbox_id, write.exec_id);
  if (!queue) return NoPipe(write.sandbox_id, write.exec_id, cancel);
  ABX_ASSIGN_OR_RETURN(std::shared_ptr<RunPlace> place, PlaceIn(queue, std::move(reserved)));
  Status entered = place->Enter(0, cancel);
  if (!entered.ok()) return entered.error();
  struct Turn {
    RunQueue* queue;
    ~Turn() { queue->Leave(); }
  } turn{queue.get()};

  ABX_ASSIGN_OR_RETURN(StdinPipes::State state,
                       pipes.AwaitHolder(write.sandbox_id, write.exec_id, NowMillis() + kPipeWaitMs, cancel));
  if (state.ended) return MakeError(ErrorCode::kInvalidState, "command " + write.exec_id + " has exited");
  if (!state.failure.empty()) {
    return MakeError(ErrorCode::kInvalidState,
                     "command " + write.exec_id + " has no stdin pipe: " + state.failure);
  }
  if (state.closed) {
    return MakeError(ErrorCode::kInvalidState, "the stdin of command " + write.exec_id + " is closed");
  }
  ABX_ASSIGN_OR_RETURN(opensandbox::ExecdClient execd, upstream_->Execd(write.sandbox_id, *config_, cancel));
  // Past this point nothing is abandoned (see the top of process_stdin.h).
  if (!write.data.empty()) {
    Status st = execd.WriteToPipe(StdinDataPath(state.holder_pid), write.data, nullptr);
    if (!st.ok()) return Refused(write.sandbox_id, write.exec_id, st.error());
  }
  if (write.eof) {
    Status st = execd.WriteToPipe(StdinEofPath(state.holder_pid), "\n", nullptr);
    if (!st.ok()) return Refused(write.sandbox_id, write.exec_id, st.error());
    pipes.SetClosed(write.exec_id);
  }
  return static_cast<int64_t>(write.data.size());
}

}  // namespace abx::core
