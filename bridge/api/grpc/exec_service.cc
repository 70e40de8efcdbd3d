#include "bridge/api/grpc/exec_service.h"

#include <mutex>
#include <string>
#include <type_traits>
#include <vector>

#include "bridge/api/grpc/typed_stream.h"
#include "bridge/base/error_codes.h"
#include "bridge/core/exec.h"
#include "bridge/core/process_stdin.h"
#include "bridge/core/shells.h"

namespace abx::api {
namespace {

namespace pb = abx::opensandbox::v1;

// The command of a Run or Start request (both carry the same fields), checked by the
// core's one validation, as EPP's exec.start is. An empty argv is no argv.
template <typename Request>
Result<core::ExecSpec> ReadSpec(const Request& request, bool detached = false) {
  core::ExecRequest spec;
  spec.sandbox_id = request.sandbox_id();
  if (request.argv_size() > 0) {
    spec.argv.emplace(request.argv().begin(), request.argv().end());
  }
  if (!request.command().empty()) spec.command = request.command();
  spec.env.insert(request.env().begin(), request.env().end());
  spec.cwd = request.cwd();
  spec.user = request.user();
  if (request.has_stdin()) spec.stdin_data = request.stdin();
  if (request.has_timeout_seconds()) spec.timeout_s = request.timeout_seconds();
  spec.timeout_field = "timeout_seconds";
  spec.detached = detached;
  spec.shell_id = request.shell_id();
  if constexpr (std::is_same_v<Request, pb::StartCommandRequest>) spec.stdin_stream = request.stdin_stream();
  return core::ValidateExec(std::move(spec));
}

void ToProto(const core::ExecExit& exit, pb::ExecExit* out) {
  if (exit.exit_code) out->set_exit_code(*exit.exit_code);
  out->set_signal(exit.signal);
  out->set_timed_out(exit.timed_out);
  out->set_cancelled(exit.cancelled);
  if (exit.error) {
    out->mutable_error()->set_code(std::string(EppCodeName(exit.error->code)));
    out->mutable_error()->set_message(exit.error->message);
  }
}

pb::OutputStream ToProto(core::OutputStream stream) {
  return stream == core::OutputStream::kStdout ? pb::OUTPUT_STREAM_STDOUT
                                               : pb::OUTPUT_STREAM_STDERR;
}

// Exec.Start: every event of the core goes out as it comes, in order. A write that
// fails means the client is gone, so the command is interrupted rather than followed
// for nobody.
class StreamingSink final : public core::ExecSink {
 public:
  StreamingSink(StreamCallReactor<pb::ExecEvent>* stream, CancelToken* cancel)
      : stream_(stream), cancel_(cancel) {}

  void OnStarted(const std::string& exec_id) override {
    pb::ExecEvent event;
    event.mutable_started()->set_exec_id(exec_id);
    Send(event);
  }
  void OnOutput(core::OutputChunk& chunk) override {
    pb::ExecEvent event;
    pb::ExecOutput* output = event.mutable_output();
    output->set_stream(ToProto(chunk.stream));
    output->set_data(std::move(chunk.data));
    std::lock_guard<std::mutex> lock(mu_);
    output->set_seq(seq_++);
    SendLocked(event);
  }
  void OnExit(const core::ExecExit& exit) override {
    pb::ExecEvent event;
    ToProto(exit, event.mutable_exit());
    Send(event);
  }

 private:
  void Send(const pb::ExecEvent& event) {
    std::lock_guard<std::mutex> lock(mu_);
    SendLocked(event);
  }
  void SendLocked(const pb::ExecEvent& event) {
    if (broken_) return;
    if (!stream_->Write(event)) {
      broken_ = true;
      cancel_->Cancel();
    }
  }

  StreamCallReactor<pb::ExecEvent>* stream_;
  CancelToken* cancel_;
  std::mutex mu_;  // one Write at a time, seq in write order
  int64_t seq_ = 0;
  bool broken_ = false;
};

}  // namespace

grpc::ServerUnaryReactor* ExecService::Run(grpc::CallbackServerContext* context, const pb::RunCommandRequest* request,
                              pb::RunCommandReply* reply) {
  return Serve(deps_, context, "Exec.Run", request->config(), [=](TypedCall& call) -> Status {
    ABX_ASSIGN_OR_RETURN(core::ExecSpec spec, ReadSpec(*request));
    core::Exec exec(call.core(), call.upstream(), &call.config());
    core::CollectingSink sink;
    Status started = exec.Run(spec, call.cancel(), &sink);
    if (!started.ok()) return started;
    if (sink.exit.cancelled) {
      return MakeError(ErrorCode::kCancelled, "Exec.Run was cancelled");
    }
    if (sink.exit.error) return *sink.exit.error;
    if (sink.exit.exit_code) reply->set_exit_code(*sink.exit.exit_code);
    reply->set_stdout(std::move(sink.stdout_data));
    reply->set_stderr(std::move(sink.stderr_data));
    reply->set_timed_out(sink.exit.timed_out);
    reply->set_signal(sink.exit.signal);
    return OkStatus();
  });
}

grpc::ServerWriteReactor<pb::ExecEvent>* ExecService::Start(
    grpc::CallbackServerContext* context, const pb::StartCommandRequest* request) {
  return ServeStream<pb::ExecEvent>(
      deps_, context, "Exec.Start", request->config(),
      [=](TypedCall& call, StreamCallReactor<pb::ExecEvent>* stream) -> Status {
        ABX_ASSIGN_OR_RETURN(core::ExecSpec spec, ReadSpec(*request, request->detached()));
        core::Exec exec(call.core(), call.upstream(), &call.config());
        StreamingSink sink(stream, call.cancel());
        // An error here means the command never started: no event was sent.
        return exec.Run(spec, call.cancel(), &sink);
      });
}

grpc::ServerUnaryReactor* ExecService::Logs(grpc::CallbackServerContext* context, const pb::ExecLogsRequest* request,
                               pb::ExecLogsReply* reply) {
  return Serve(
      deps_, context, "Exec.Logs", request->config(), [=](TypedCall& call) -> Status {
        ABX_ASSIGN_OR_RETURN(std::string sandbox_id, Required(request->sandbox_id(), "sandbox_id"));
        ABX_ASSIGN_OR_RETURN(std::string exec_id, Required(request->exec_id(), "exec_id"));
        if (request->cursor() < 0) {
          return InvalidParams("cursor", "cursor must not be negative");
        }
        core::Exec exec(call.core(), call.upstream(), &call.config());
        ABX_ASSIGN_OR_RETURN(core::Exec::Logs logs,
                             exec.ReadLogs(sandbox_id, exec_id, request->cursor(), call.cancel()));
        reply->set_data(std::move(logs.data));
        reply->set_cursor(logs.cursor);
        reply->set_running(logs.running);
        if (logs.exit_code) reply->set_exit_code(*logs.exit_code);
        return OkStatus();
      });
}

grpc::ServerUnaryReactor* ExecService::CreateShell(grpc::CallbackServerContext* context,
                                                 const pb::CreateShellRequest* request,
                                                 pb::CreateShellReply* reply) {
  return Serve(deps_, context, "Exec.CreateShell", request->config(), [=](TypedCall& call) -> Status {
    ABX_ASSIGN_OR_RETURN(std::string sandbox_id, Required(request->sandbox_id(), "sandbox_id"));
    core::Shells shells(call.core(), call.upstream(), &call.config());
    ABX_ASSIGN_OR_RETURN(std::string shell_id, shells.Create(sandbox_id, request->cwd(), call.cancel()));
    reply->set_shell_id(shell_id);
    return OkStatus();
  });
}

grpc::ServerUnaryReactor* ExecService::CloseShell(grpc::CallbackServerContext* context,
                                                const pb::CloseShellRequest* request,
                                                pb::CloseShellReply* reply) {
  return Serve(deps_, context, "Exec.CloseShell", request->config(), [=](TypedCall& call) -> Status {
    ABX_ASSIGN_OR_RETURN(std::string sandbox_id, Required(request->sandbox_id(), "sandbox_id"));
    ABX_ASSIGN_OR_RETURN(std::string shell_id, Required(request->shell_id(), "shell_id"));
    core::Shells shells(call.core(), call.upstream(), &call.config());
    ABX_ASSIGN_OR_RETURN(bool closed, shells.Close(sandbox_id, shell_id, call.cancel()));
    reply->set_closed(closed);
    return OkStatus();
  });
}

grpc::ServerUnaryReactor* ExecService::WriteStdin(grpc::CallbackServerContext* context,
                                                const pb::WriteStdinRequest* request,
                                                pb::WriteStdinReply* reply) {
  return Serve(deps_, context, "Exec.WriteStdin", request->config(), [=](TypedCall& call) -> Status {
    core::StdinWrite write;
    ABX_ASSIGN_OR_RETURN(write.sandbox_id, Required(request->sandbox_id(), "sandbox_id"));
    ABX_ASSIGN_OR_RETURN(write.exec_id, Required(request->exec_id(), "exec_id"));
    write.data = request->data();
    write.eof = request->eof();
    core::ProcessStdin stdin_writer(call.upstream(), &call.config());
    // No place taken on arrival: a gRPC call has no reader that sees calls in order, so
    // the order is the one in which calls reach the bridge's handlers.
    ABX_ASSIGN_OR_RETURN(int64_t written, stdin_writer.Write(write, nullptr, call.cancel()));
    reply->set_written(written);
    return OkStatus();
  });
}

}  // namespace abx::api
