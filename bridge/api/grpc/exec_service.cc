#include "bridge/api/grpc/exec_service.h"

#include <string>

#include "bridge/api/grpc/exec_events.h"
#include "bridge/api/grpc/exec_interact.h"
#include "bridge/api/grpc/exec_request.h"
#include "bridge/api/grpc/typed_stream.h"
#include "bridge/core/exec/exec.h"
#include "bridge/core/exec/process_stdin.h"
#include "bridge/core/exec/shells.h"

namespace abx::api {
namespace {

namespace pb = abx::opensandbox::v1;

}  // namespace

grpc::ServerUnaryReactor* ExecService::Run(grpc::CallbackServerContext* context, const pb::RunCommandRequest* request,
                              pb::RunCommandReply* reply) {
  return Serve(deps_, context, "Exec.Run", request->config(), [=](TypedCall& call) -> Status {
    ABX_ASSIGN_OR_RETURN(core::ExecSpec spec, ReadExecSpec(*request));
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
        ABX_ASSIGN_OR_RETURN(core::ExecSpec spec, ReadExecSpec(*request, request->detached()));
        core::Exec exec(call.core(), call.upstream(), &call.config());
        ExecEventSink sink([stream](const pb::ExecEvent& event) { return stream->Write(event); }, call.cancel());
        // An error here means the command never started: no event was sent.
        return exec.Run(spec, call.cancel(), &sink);
      });
}

grpc::ServerBidiReactor<pb::ExecInput, pb::ExecEvent>* ExecService::Interact(grpc::CallbackServerContext* context) {
  return StartInteract(deps_, context);
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
