// exec.run, exec.stream, exec.detached, commands of exec.shell; exec.logs.
#include <atomic>

#include "bridge/api/epp/jsonrpc.h"
#include "bridge/api/epp/methods.h"
#include "bridge/api/epp/params.h"
#include "bridge/api/epp/session.h"
#include "bridge/base/error_codes.h"
#include "bridge/base/json.h"
#include "bridge/base/utf8.h"
#include "bridge/core/bridge_core.h"
#include "bridge/core/exec/exec.h"

namespace abx::epp {
namespace {

using json::Quote;

// The params of exec.start and exec.run, checked by the core's one validation.
Result<core::ExecSpec> ReadSpec(Request& req, bool allow_detached) {
  Params p(req.params());
  core::ExecRequest request;
  ABX_ASSIGN_OR_RETURN(request.sandbox_id, SandboxId(p));
  ABX_ASSIGN_OR_RETURN(request.argv, p.StringArray("argv"));
  ABX_ASSIGN_OR_RETURN(request.command, p.String("command"));
  ABX_ASSIGN_OR_RETURN(auto env, p.StringMap("env"));
  if (env) request.env = std::move(*env);
  ABX_ASSIGN_OR_RETURN(auto cwd, p.String("cwd"));
  request.cwd = cwd.value_or("");
  if (const rapidjson::Value* user = p.Raw("user")) {
    if (user->IsString()) {
      request.user = user->GetString();
    } else if (user->IsUint()) {
      request.user = std::to_string(user->GetUint());
    } else {
      return InvalidParams("user", "user must be a name or a numeric uid");
    }
  }
  ABX_ASSIGN_OR_RETURN(request.stdin_data, p.String("stdin"));
  ABX_ASSIGN_OR_RETURN(auto stdin_stream, p.Bool("stdin_stream"));
  if (stdin_stream && *stdin_stream && !allow_detached) {
    return InvalidParams("stdin_stream",
                         "exec.run does not take stdin_stream: its answer comes after the command ends; "
                         "use exec.start");
  }
  request.stdin_stream = stdin_stream.value_or(false);
  ABX_ASSIGN_OR_RETURN(request.timeout_s, p.Number("timeout"));
  ABX_ASSIGN_OR_RETURN(auto detached, p.Bool("detached"));
  if (detached && !allow_detached) {
    return InvalidParams("detached", "exec.run does not take detached; use exec.start");
  }
  request.detached = detached.value_or(false);
  ABX_ASSIGN_OR_RETURN(auto shell_id, p.String("shell_id"));
  if (shell_id && shell_id->empty()) return InvalidParams("shell_id", "shell_id must not be empty");
  request.shell_id = shell_id.value_or("");
  return core::ValidateExec(std::move(request));
}

// EPP/1 allows exec.exit `signal` to be only "SIGKILL" or null: a command that ended by
// any signal (a cancel is execd's SIGTERM, SIGKILL 3 s later; a timeout is SIGKILL) is
// reported as "SIGKILL". The typed API keeps the name execd gave.
std::string ExitJson(const std::string& exec_id, const core::ExecExit& exit) {
  std::string out = "{\"exec_id\":" + Quote(exec_id) + ",\"exit_code\":" +
                    (exit.exit_code ? std::to_string(*exit.exit_code) : "null") +
                    ",\"signal\":" + (exit.signal.empty() ? "null" : "\"SIGKILL\"") +
                    ",\"timed_out\":" + (exit.timed_out ? "true" : "false") +
                    ",\"cancelled\":" + (exit.cancelled ? "true" : "false") + ",\"error\":";
  if (exit.error) {
    out += "{\"code\":" + Quote(std::string(EppCodeName(exit.error->code))) +
           ",\"message\":" + Quote(exit.error->message) + "}";
  } else {
    out += "null";
  }
  return out + "}";
}

// exec.start: answers with the exec_id as soon as execd names the command, then
// notifications strictly in order on this one thread: exec.output (seq 0, 1, …) and
// exactly one exec.exit.
class NotifyingSink final : public core::ExecSink {
 public:
  explicit NotifyingSink(Request* req) : req_(req) {}

  void OnStarted(const std::string& exec_id) override {
    exec_id_ = exec_id;
    req_->Respond("{\"exec_id\":" + Quote(exec_id) + "}");
  }
  void OnOutput(core::OutputChunk& chunk) override {
    // Built in one buffer: a stream moves its bytes through here, and every extra copy
    // or reallocation of a chunk shows in its throughput.
    // Room for an escape every 16 bytes (a "\n" per line is typical).
    std::string line = NotificationStart(
        "exec.output", chunk.data.size() + chunk.data.size() / 16 + exec_id_.size() + 64);
    line.append("{\"exec_id\":");
    json::AppendQuoted(&line, exec_id_);
    line.append(chunk.stream == core::OutputStream::kStdout ? ",\"stream\":\"stdout\",\"data\":"
                                                            : ",\"stream\":\"stderr\",\"data\":");
    json::AppendQuoted(&line, chunk.data);
    line.append(",\"seq\":").append(std::to_string(seq_++)).append("}");
    NotificationEnd(&line);
    req_->NotifyLine(std::move(line));
  }
  void OnExit(const core::ExecExit& exit) override { req_->Notify("exec.exit", ExitJson(exec_id_, exit)); }

 private:
  Request* req_;
  std::string exec_id_;
  int64_t seq_ = 0;
};

}  // namespace

bool AttachesHost(std::string_view method, const rapidjson::Value& params) {
  // Interrupted at end of input; a transfer's temporary file is removed.
  // A snapshot taken for nobody is deleted.
  if (method == "exec.run" || method == "code.run" || method == "files.download" || method == "files.upload" ||
      method == "sandbox.snapshot" || method == "templates.build") {
    return true;
  }
  if (method != "exec.start") return false;
  // A `detached` that is not a boolean fails the request in ReadSpec; until then the
  // command counts as attached, which errs on the side of cancelling.
  auto detached = params.FindMember("detached");
  return detached == params.MemberEnd() || !detached->value.IsTrue();
}

Result<std::string> ExecStart(Request& req) {
  ABX_ASSIGN_OR_RETURN(core::ExecSpec spec, ReadSpec(req, true));
  ABX_ASSIGN_OR_RETURN(spec.place, req.TakeRunPlace());
  core::Exec exec(&req.session().core(), req.session().upstream().get(), &req.session().config());
  NotifyingSink sink(&req);
  Status st = exec.Run(spec, &req.cancel(), &sink);
  if (!st.ok()) return st.error();
  return std::string("null");  // already answered with the exec_id
}

Result<std::string> ExecRun(Request& req) {
  ABX_ASSIGN_OR_RETURN(core::ExecSpec spec, ReadSpec(req, false));
  ABX_ASSIGN_OR_RETURN(spec.place, req.TakeRunPlace());
  core::Exec exec(&req.session().core(), req.session().upstream().get(), &req.session().config());
  core::CollectingSink sink;
  Status st = exec.Run(spec, &req.cancel(), &sink);
  if (!st.ok()) return st.error();
  if (sink.exit.cancelled) {
    return MakeError(ErrorCode::kCancelled, "exec.run was cancelled");
  }
  if (sink.exit.error) return *sink.exit.error;
  return "{\"exit_code\":" + (sink.exit.exit_code ? std::to_string(*sink.exit.exit_code) : "null") +
         ",\"stdout\":" + Quote(sink.stdout_data) + ",\"stderr\":" + Quote(sink.stderr_data) +
         ",\"timed_out\":" + (sink.exit.timed_out ? "true" : "false") + "}";
}

Result<std::string> ExecLogs(Request& req) {
  Params p(req.params());
  ABX_ASSIGN_OR_RETURN(std::string sandbox_id, SandboxId(p));
  ABX_ASSIGN_OR_RETURN(std::string exec_id, p.RequiredString("exec_id"));
  ABX_ASSIGN_OR_RETURN(auto cursor, p.Int("cursor"));
  if (cursor && *cursor < 0) return InvalidParams("cursor", "cursor must not be negative");
  core::Exec exec(&req.session().core(), req.session().upstream().get(), &req.session().config());
  ABX_ASSIGN_OR_RETURN(core::Exec::Logs logs,
                       exec.ReadLogs(sandbox_id, exec_id, cursor.value_or(0), &req.cancel()));
  return "{\"data\":" + Quote(ToValidUtf8(logs.data)) + ",\"cursor\":" + std::to_string(logs.cursor) +
         ",\"running\":" + (logs.running ? "true" : "false") + ",\"exit_code\":" +
         (logs.exit_code ? std::to_string(*logs.exit_code) : "null") + "}";
}

}  // namespace abx::epp
