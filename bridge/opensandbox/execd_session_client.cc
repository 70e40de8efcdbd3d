// ExecdClient's bash sessions (docs/opensandbox.md §2.9, §2.15): create, a run's event
// stream, delete. The rest of ExecdClient is in execd_client.cc.
#include <rapidjson/document.h>

#include "bridge/base/json.h"
#include "bridge/opensandbox/error_body.h"
#include "bridge/opensandbox/execd_client.h"
#include "common/percent_encoding.h"

namespace abx::opensandbox {
namespace {


Error TooOld(std::string what) {
  Error e = MakeError(ErrorCode::kInvalidState,
                      what + ": the sandbox's execd is too old for shells (they need execd 1.0.9 or newer)");
  e.http_status = 404;
  return e;
}

constexpr int64_t kSessionDrainMs = 3000;

}  // namespace

std::string SessionRunBody(const std::string& command) {
  return "{\"command\":" + json::Quote(command) + "}";
}

Result<std::string> ExecdClient::CreateSession(const std::string& cwd, const CancelToken* cancel) {
  HttpCall call = Call("POST", "/session");
  call.headers.emplace_back("Content-Type", "application/json");
  call.body = cwd.empty() ? std::string("{}") : "{\"cwd\":" + json::Quote(cwd) + "}";
  auto answer = http_->Send(call, cancel, "create shell");
  if (!answer.ok()) {
    if (IsRouteMissing(answer.error())) return TooOld("create shell");
    return answer.error();
  }
  rapidjson::Document doc;
  doc.Parse<json::kParseFlags>(answer->body.c_str(), answer->body.size());
  auto id = doc.HasParseError() ? std::nullopt : json::GetString(doc, "session_id");
  if (!id || id->empty()) {
    return MakeError(ErrorCode::kUpstream, "create shell: execd answered something that is not its API");
  }
  return *id;
}

Status ExecdClient::RunInSession(const std::string& session_id, const std::string& body_json,
                                 const CancelToken* cancel, int64_t idle_timeout_ms,
                                 const std::function<bool(const ExecdEvent&)>& on_event,
                                 const std::function<void()>& on_batch) {
  const std::string path = "/session/" + PercentEncode(session_id) + "/run";
  // execd may end the stream with its bare {"code","message"} object (a line over its
  // limit): passed on, for the caller to report.
  HttpCall call = StreamCall(path.c_str(), body_json, idle_timeout_ms);
  // The stream ends right after its last event, which the caller stops at: reading that
  // end keeps the connection for the next command (a cancel drops it all the same).
  call.drain_ms = kSessionDrainMs;
  Status st = ReadEventStream(call, cancel, "run in shell", /*untyped_is_garbage=*/false, on_event, on_batch);
  if (st.ok()) return st;
  const Error& e = st.error();
  // The bridge sends nothing execd 1.0.9 refuses (a command; no timeout, no cwd): a 400
  // is execd 1.0.8, whose run request had `code` and `timeout_ms` instead.
  if (IsRouteMissing(e) || e.http_status == 400) return TooOld("run in shell");
  if (e.http_status == 500 && e.message.find("context not found") != std::string::npos) {
    Error gone = MakeError(ErrorCode::kNotFound, "shell " + session_id + " does not exist");
    gone.field = "shell_id";
    return gone;
  }
  return st;
}

Result<bool> ExecdClient::DeleteSession(const std::string& session_id, const CancelToken* cancel) {
  HttpCall call = Call("DELETE", "/session/" + PercentEncode(session_id));
  auto answer = http_->Send(call, cancel, "close shell");
  if (!answer.ok()) {
    if (IsRouteMissing(answer.error())) return TooOld("close shell");
    if (answer.error().http_status == 404) return false;
    return answer.error();
  }
  return true;
}

}  // namespace abx::opensandbox
