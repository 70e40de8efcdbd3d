// process.manage (partial: an exec_id takes only SIGKILL), process.stdin included.
#include "bridge/api/epp/methods.h"
#include "bridge/api/epp/params.h"
#include "bridge/api/epp/session.h"
#include "bridge/base/json.h"
#include "bridge/core/bridge_core.h"
#include "bridge/core/exec/process_stdin.h"
#include "bridge/core/exec/processes.h"

namespace abx::epp {
namespace {

using json::Quote;

core::Processes ProcessesOf(Request& req) {
  return core::Processes(req.session().upstream().get(), &req.session().config());
}

// Exactly one of pid or exec_id.
Status ReadTarget(const Params& p, std::optional<int64_t>* pid, std::optional<std::string>* exec_id) {
  ABX_ASSIGN_OR_RETURN(*pid, p.Int("pid"));
  ABX_ASSIGN_OR_RETURN(*exec_id, p.String("exec_id"));
  if (pid->has_value() == exec_id->has_value()) {
    return InvalidParams("pid", "exactly one of pid or exec_id is required");
  }
  if (*pid && (**pid < 1 || **pid > 0x3fffffff)) return InvalidParams("pid", "pid is not a process id");
  return OkStatus();
}

}  // namespace

Result<std::string> ProcessList(Request& req) {
  ABX_ASSIGN_OR_RETURN(std::string id, SandboxId(Params(req.params())));
  ABX_ASSIGN_OR_RETURN(std::vector<core::ProcessInfo> list, ProcessesOf(req).List(id, &req.cancel()));
  std::string out = "{\"processes\":[";
  for (size_t i = 0; i < list.size(); ++i) {
    const auto& p = list[i];
    out += std::string(i ? "," : "") + "{\"pid\":" + std::to_string(p.pid) + ",\"user\":" +
           Quote(p.user) + ",\"command\":" + Quote(p.command) + ",\"exec_id\":" +
           (p.exec_id.empty() ? std::string("null") : Quote(p.exec_id)) + "}";
  }
  return out + "]}";
}

Result<std::string> ProcessKill(Request& req) {
  Params p(req.params());
  ABX_ASSIGN_OR_RETURN(std::string id, SandboxId(p));
  std::optional<int64_t> pid;
  std::optional<std::string> exec_id;
  Status st = ReadTarget(p, &pid, &exec_id);
  if (!st.ok()) return st.error();
  core::Processes processes = ProcessesOf(req);
  ABX_ASSIGN_OR_RETURN(bool killed, pid ? processes.SignalPid(id, static_cast<int>(*pid), "KILL", &req.cancel())
                                        : processes.KillExec(id, *exec_id, &req.cancel()));
  return std::string(killed ? "{\"killed\":true}" : "{\"killed\":false}");
}

Result<std::string> ProcessSignal(Request& req) {
  Params p(req.params());
  ABX_ASSIGN_OR_RETURN(std::string id, SandboxId(p));
  std::optional<int64_t> pid;
  std::optional<std::string> exec_id;
  Status st = ReadTarget(p, &pid, &exec_id);
  if (!st.ok()) return st.error();
  std::string signal;
  if (const rapidjson::Value* v = p.Raw("signal")) {
    if (v->IsString()) signal = v->GetString();
    else if (v->IsInt()) signal = std::to_string(v->GetInt());
  }
  auto name = core::NormalizeSignal(signal);
  if (!name) return InvalidParams("signal", "signal must be a signal name or number");
  core::Processes processes = ProcessesOf(req);
  if (exec_id) {
    if (*name != "KILL" && *name != "9") {
      return MakeError(ErrorCode::kUnsupported,
                             "an execd command id takes only SIGKILL; signal its pid instead");
    }
    ABX_ASSIGN_OR_RETURN(bool killed, processes.KillExec(id, *exec_id, &req.cancel()));
    if (!killed) return MakeError(ErrorCode::kNotFound, "command " + *exec_id + " is not running");
    return std::string("{}");
  }
  ABX_ASSIGN_OR_RETURN(bool sent, processes.SignalPid(id, static_cast<int>(*pid), *name, &req.cancel()));
  if (!sent) return MakeError(ErrorCode::kNotFound, "no process " + std::to_string(*pid) + " to signal");
  return std::string("{}");
}

Result<std::string> ProcessStdin(Request& req) {
  Params p(req.params());
  core::StdinWrite write;
  ABX_ASSIGN_OR_RETURN(write.sandbox_id, SandboxId(p));
  ABX_ASSIGN_OR_RETURN(write.exec_id, p.RequiredString("exec_id"));
  if (write.exec_id.empty()) return InvalidParams("exec_id", "exec_id must not be empty");
  ABX_ASSIGN_OR_RETURN(auto data, p.String("data"));
  ABX_ASSIGN_OR_RETURN(std::string encoding, DataEncoding(p));
  if (data && encoding == "base64") {
    ABX_ASSIGN_OR_RETURN(write.data, DecodeBase64Data(*data));
  } else if (data) {
    write.data = std::move(*data);
  }
  ABX_ASSIGN_OR_RETURN(auto eof, p.Bool("eof"));
  write.eof = eof.value_or(false);
  core::ProcessStdin stdin_writer(req.session().upstream().get(), &req.session().config());
  ABX_ASSIGN_OR_RETURN(std::shared_ptr<core::RunPlace> place, req.TakeRunPlace());
  ABX_ASSIGN_OR_RETURN(int64_t written, stdin_writer.Write(write, std::move(place), &req.cancel()));
  return "{\"written\":" + std::to_string(written) + "}";
}

}  // namespace abx::epp
