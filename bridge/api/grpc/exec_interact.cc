#include "bridge/api/grpc/exec_interact.h"

#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "bridge/api/grpc/blocking_op.h"
#include "bridge/api/grpc/exec_events.h"
#include "bridge/api/grpc/exec_request.h"
#include "bridge/core/exec/exec.h"
#include "bridge/core/exec/process_stdin.h"

namespace abx::api {
namespace {

namespace pb = abx::opensandbox::v1;

using Reactor = grpc::ServerBidiReactor<pb::ExecInput, pb::ExecEvent>;

// How long a failed write waits for its command's end before it counts as a failure.
constexpr auto kEndGrace = std::chrono::seconds(2);

// The core's events, passed on; the exec_id handed to whoever waits for it too.
class StartedSink final : public core::ExecSink {
 public:
  StartedSink(core::ExecSink* events, std::function<void(const std::string&)> started)
      : events_(events), started_(std::move(started)) {}
  void OnStarted(const std::string& exec_id) override {
    events_->OnStarted(exec_id);
    started_(exec_id);
  }
  void OnOutput(core::OutputChunk& chunk) override { events_->OnOutput(chunk); }
  void OnExit(const core::ExecExit& exit) override { events_->OnExit(exit); }

 private:
  core::ExecSink* events_;
  std::function<void(const std::string&)> started_;
};

class InteractReactor final : public Reactor {
 public:
  InteractReactor(const TypedDeps& deps, grpc::CallbackServerContext* context)
      : runner_(deps.runner), call_(deps, context, "Exec.Interact") {}

  void Start() {
    runner_->Run([this] {
      pb::ExecInput first;
      Status status = OkStatus();
      if (!NextInput(&first)) {
        status = MakeError(ErrorCode::kCancelled, "Exec.Interact ended before its start message");
      } else if (!first.has_start()) {
        status = InvalidParams("start", "the first message of Exec.Interact must be start");
      } else {
        status = RunTypedBody(call_, first.start().config(), [&](TypedCall& call) { return Body(call, first.start()); });
      }
      StopReading();
      this->Finish(call_.Finish(status));
    });
  }

  void OnReadDone(bool ok) override {
    {
      std::lock_guard<std::mutex> lock(mu_);
      read_pending_ = false;
      if (!ok) reads_ended_ = true;
    }
    changed_.notify_all();
  }
  void OnWriteDone(bool ok) override { writes_.Done(ok); }
  void OnCancel() override { call_.cancel()->Cancel(); }
  void OnDone() override { delete this; }

 private:
  Status Body(TypedCall& call, const pb::StartCommandRequest& start) {
    if (start.detached()) return InvalidParams("detached", "Exec.Interact runs an attached command");
    if (start.has_stdin()) return InvalidParams("stdin", "Exec.Interact feeds stdin from the call: give no stdin");
    if (!start.shell_id().empty()) {
      Error e = MakeError(ErrorCode::kUnsupported, "a shell gives its commands no stdin: Exec.Interact takes no shell_id");
      e.field = "shell_id";
      return e;
    }
    pb::StartCommandRequest request = start;
    request.set_stdin_stream(true);
    ABX_ASSIGN_OR_RETURN(core::ExecSpec spec, ReadExecSpec(request));
    ExecEventSink events([this](const pb::ExecEvent& event) { return Write(event); }, call.cancel());
    StartedSink sink(&events, [this](const std::string& exec_id) {
      {
        std::lock_guard<std::mutex> lock(mu_);
        exec_id_ = exec_id;
      }
      changed_.notify_all();
    });
    std::thread feeder([&] { Feed(call, spec.sandbox_id); });
    Status run = core::Exec(call.core(), call.upstream(), &call.config()).Run(spec, call.cancel(), &sink);
    {
      std::lock_guard<std::mutex> lock(mu_);
      run_over_ = true;
    }
    changed_.notify_all();
    // The command is over: the feeder reads no more, and ends once a write it has begun
    // is done (a write handed to execd is not abandoned; with its command gone it fails).
    StopReading();
    feeder.join();
    if (!run.ok()) return run;
    return feed_error_;
  }

  // The feeder: each `stdin` message into the command's pipe, in order, then end of file
  // when the client closed its side. Once a write finds the pipe closed or the command
  // ended, later messages are read and dropped (the exit event follows). Any other
  // failure ends the call with that error and the command, unless the command ends
  // within a moment of it: a write in the gap between the pipe's end and the command's
  // is the command's end, not a failure.
  void Feed(TypedCall& call, const std::string& sandbox_id) {
    std::string exec_id;
    {
      std::unique_lock<std::mutex> lock(mu_);
      changed_.wait(lock, [&] { return !exec_id_.empty() || run_over_; });
      if (exec_id_.empty()) return;  // the command never started
      exec_id = exec_id_;
    }
    core::ProcessStdin writer(call.upstream(), &call.config());
    bool writable = true;
    // False when `e` ends the feeding with the call.
    auto failed = [&](const Error& e) {
      if (e.code == ErrorCode::kInvalidState) {  // the pipe is closed or the command ended
        writable = false;
        return true;
      }
      {
        std::unique_lock<std::mutex> lock(mu_);
        if (changed_.wait_for(lock, kEndGrace, [&] { return run_over_; })) {
          writable = false;
          return true;
        }
        feed_error_ = e;
      }
      call.cancel()->Cancel();
      return false;
    };
    pb::ExecInput input;
    while (NextInput(&input)) {
      if (input.has_start()) {
        {
          std::lock_guard<std::mutex> lock(mu_);
          feed_error_ = InvalidParams("start", "start comes only as the first message of Exec.Interact");
        }
        call.cancel()->Cancel();
        return;
      }
      if (!writable || input.stdin().empty()) continue;
      auto written = writer.Write(core::StdinWrite{sandbox_id, exec_id, input.stdin(), false}, nullptr, call.cancel());
      if (!written.ok() && !failed(written.error())) return;
    }
    bool client_closed = false;
    {
      std::lock_guard<std::mutex> lock(mu_);
      client_closed = reads_ended_ && !finishing_;
    }
    if (!client_closed || !writable || call.cancel()->cancelled()) return;
    auto closed = writer.Write(core::StdinWrite{sandbox_id, exec_id, "", true}, nullptr, call.cancel());
    if (!closed.ok()) failed(closed.error());
  }

  // The client's next message: false once it closed its side, the call was cancelled, or
  // the call is finishing. No read is started once StopReading has run, so none is started
  // after Finish; a read still out then completes into this reactor, which gRPC keeps
  // until OnDone.
  bool NextInput(pb::ExecInput* message) {
    {
      std::lock_guard<std::mutex> start(start_mu_);
      {
        std::lock_guard<std::mutex> lock(mu_);
        if (finishing_ || reads_ended_) return false;
        read_pending_ = true;
      }
      // Without mu_: gRPC may report the read done before StartRead returns.
      this->StartRead(&message_);
    }
    std::unique_lock<std::mutex> lock(mu_);
    changed_.wait(lock, [&] { return !read_pending_ || finishing_; });
    if (read_pending_ || reads_ended_) return false;
    *message = std::move(message_);
    return true;
  }

  void StopReading() {
    std::lock_guard<std::mutex> start(start_mu_);
    {
      std::lock_guard<std::mutex> lock(mu_);
      finishing_ = true;
    }
    changed_.notify_all();
  }

  bool Write(const pb::ExecEvent& event) {
    return writes_.Run([&] { this->StartWrite(&event); });
  }

  TaskRunner* const runner_;
  TypedCall call_;
  BlockingOp writes_;
  std::mutex start_mu_;  // held from the check of finishing_ until a read is started
  std::mutex mu_;
  std::condition_variable changed_;
  pb::ExecInput message_;      // the read in flight's message
  bool read_pending_ = false;  // under mu_
  bool reads_ended_ = false;   // under mu_: a read failed (the client closed its side, or went)
  bool finishing_ = false;     // under mu_: no read is started any more
  std::string exec_id_;        // under mu_: once the command started
  bool run_over_ = false;      // under mu_: the command's Run returned
  Status feed_error_ = OkStatus();  // under mu_
};

}  // namespace

Reactor* StartInteract(const TypedDeps& deps, grpc::CallbackServerContext* context) {
  auto* reactor = new InteractReactor(deps, context);
  reactor->Start();
  return reactor;
}

}  // namespace abx::api
