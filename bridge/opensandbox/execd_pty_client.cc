// ExecdClient's terminals (docs/opensandbox.md §2.16): the REST routes and the WebSocket
// of one terminal. The rest of ExecdClient is in execd_client.cc; the frames are
// pty_frames.h's.
#include <rapidjson/document.h>

#include "bridge/base/json.h"
#include "bridge/http/url.h"
#include "bridge/opensandbox/error_body.h"
#include "bridge/opensandbox/execd_client.h"
#include "common/percent_encoding.h"

namespace abx::opensandbox {
namespace {


Error TooOld(const std::string& what) {
  return MakeError(ErrorCode::kInvalidState,
                   what + ": the sandbox's execd is too old for terminals (they need execd 1.0.10 or newer)");
}

Error NotFound(const std::string& id) {
  Error e = MakeError(ErrorCode::kNotFound, "terminal " + id + " does not exist");
  e.field = "pty_id";
  return e;
}

}  // namespace

Result<std::string> ExecdClient::CreatePty(const std::string& cwd, const std::string& command,
                                           const CancelToken* cancel) {
  HttpCall call = Call("POST", "/pty");
  call.headers.emplace_back("Content-Type", "application/json");
  std::string body = "{";
  if (!cwd.empty()) body += "\"cwd\":" + json::Quote(cwd);
  if (!command.empty()) body += std::string(cwd.empty() ? "" : ",") + "\"command\":" + json::Quote(command);
  call.body = body + "}";
  auto answer = http_->Send(call, cancel, "open terminal");
  if (!answer.ok()) {
    if (IsRouteMissing(answer.error())) return TooOld("open terminal");
    return answer.error();
  }
  // execd answers a failed cwd with its error and an id concatenated: the error counts.
  rapidjson::Document doc;
  doc.Parse<json::kParseFlags>(answer->body.c_str(), answer->body.size());
  auto id = doc.HasParseError() ? std::nullopt : json::GetString(doc, "session_id");
  if (!id || id->empty()) {
    return MakeError(ErrorCode::kUpstream, "open terminal: execd answered something that is not its API");
  }
  return *id;
}

Result<PtyStatus> ExecdClient::GetPty(const std::string& pty_id, const CancelToken* cancel) {
  HttpCall call = Call("GET", "/pty/" + PercentEncode(pty_id));
  call.idempotent = true;
  auto answer = http_->Send(call, cancel, "terminal status");
  if (!answer.ok()) {
    if (IsRouteMissing(answer.error())) return TooOld("terminal status");
    if (answer.error().http_status == 404) return NotFound(pty_id);
    return answer.error();
  }
  rapidjson::Document doc;
  doc.Parse<json::kParseFlags>(answer->body.c_str(), answer->body.size());
  const rapidjson::Value* running = doc.HasParseError() ? nullptr : json::GetMember(doc, "running");
  const rapidjson::Value* offset = doc.HasParseError() ? nullptr : json::GetMember(doc, "output_offset");
  if (!running || !running->IsBool() || !offset || !offset->IsUint64()) {
    return MakeError(ErrorCode::kUpstream, "terminal status: execd answered something that is not its API");
  }
  return PtyStatus{pty_id, running->GetBool(), offset->GetUint64()};
}

Result<bool> ExecdClient::DeletePty(const std::string& pty_id, const CancelToken* cancel) {
  HttpCall call = Call("DELETE", "/pty/" + PercentEncode(pty_id));
  auto answer = http_->Send(call, cancel, "close terminal");
  if (!answer.ok()) {
    if (IsRouteMissing(answer.error())) return TooOld("close terminal");
    if (answer.error().http_status == 404) return false;
    return answer.error();
  }
  return true;
}

Result<std::shared_ptr<http::WebSocket>> ExecdClient::OpenPty(const std::string& pty_id, uint64_t since,
                                                              bool takeover, http::WebSocket::Handlers handlers,
                                                              const CancelToken* cancel) {
  http::WebSocketRequest request;
  http::QueryParams query = {{"since", std::to_string(since)}};
  if (takeover) query.emplace_back("takeover", "1");
  request.url = http::AppendQuery(http::JoinUrl(target_.base_url, "/pty/" + PercentEncode(pty_id) + "/ws"), query);
  request.headers = target_.headers;
  request.timeout_ms = timeout_ms_;
  ABX_ASSIGN_OR_RETURN(http::WebSocketOpened opened,
                       http_->OpenWebSocket(request, std::move(handlers), cancel, "connect to terminal"));
  if (opened.socket) return opened.socket;
  Error e = FromHttpStatus(opened.status, opened.body, "", "connect to terminal");
  if (opened.status == 404) return e.code == ErrorCode::kNotFound ? NotFound(pty_id) : TooOld("connect to terminal");
  if (opened.status == 409) {
    e.code = ErrorCode::kInvalidState;
    e.message = "terminal " + pty_id + " is held by another client";
  }
  return e;
}

}  // namespace abx::opensandbox
