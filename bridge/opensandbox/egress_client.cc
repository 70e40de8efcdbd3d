#include "bridge/opensandbox/egress_client.h"

#include <rapidjson/document.h>

#include "bridge/base/json.h"
#include "bridge/http/header_map.h"
#include "bridge/http/url.h"
#include "bridge/opensandbox/error_body.h"

namespace abx::opensandbox {
namespace {

// The sidecar's words: the first line of its text answer, bounded.
std::string FirstLine(const std::string& body) {
  std::string line = body.substr(0, body.find('\n'));
  if (line.size() > 300) line = line.substr(0, 300) + "…";
  return line;
}

// What an answer that is not a success means. The sidecar's own errors are Go's plain
// text; the hops before it (execd's proxy, the server proxy) answer in their own shapes.
Error Refusal(const HttpAnswer& answer, std::string_view what, const char* needs_release) {
  Error e;
  e.http_status = answer.status;
  e.request_id = answer.Header("x-request-id");
  const bool api_body = answer.Header("content-type").rfind("application/json", 0) == 0;
  switch (answer.status) {
    case 401:
    case 403:
      if (!api_body) {
        e.code = ErrorCode::kAuth;
        e.message = std::string(what) + ": the egress sidecar refused the sandbox's egress token";
        return e;
      }
      if (answer.body.find("EXECD-ACCESS-TOKEN") != std::string::npos) {  // execd's own words
        e.code = ErrorCode::kAuth;
        e.message = std::string(what) + ": execd, on the way to the egress sidecar, refused the execd access token";
        return e;
      }
      break;  // the server's own refusal, in its words
    case 405:
      e.code = ErrorCode::kInvalidState;
      e.message = std::string(what) + ": the sandbox's egress sidecar is too old (this needs egress " +
                  needs_release + " or newer)";
      return e;
    case 413:
      e.code = ErrorCode::kTooLarge;
      e.message = std::string(what) + ": the egress sidecar refused it: " + FirstLine(answer.body);
      return e;
    case 502:
    case 503:
    case 504:
      if (!api_body || answer.body.find("Could not connect") != std::string::npos) {
        e.code = ErrorCode::kUnreachable;
        e.message = std::string(what) + ": the sandbox's egress sidecar does not answer (HTTP " +
                    std::to_string(answer.status) + ")";
        e.retryable = true;
        return e;
      }
      break;
    default:
      break;
  }
  if (api_body) return FromHttpStatus(answer.status, answer.body, e.request_id, what);
  e.code = ErrorCode::kUpstream;
  e.message = std::string(what) + ": the egress sidecar answered HTTP " + std::to_string(answer.status) +
              (answer.body.empty() ? "" : " (" + FirstLine(answer.body) + ")");
  return e;
}

Error NotItsApi(std::string_view what) {
  return MakeError(ErrorCode::kUpstream, std::string(what) + ": the egress sidecar answered something that is not its API");
}

}  // namespace

const std::string* EgressToken(const Headers& headers) {
  for (const auto& [name, value] : headers) {
    if (http::EqualsIgnoreCase(name, kEgressAuthHeader)) return &value;
  }
  return nullptr;
}

std::string EgressClient::PatchBody(const std::vector<EgressRule>& rules) {
  std::string body = "[";
  for (const EgressRule& rule : rules) {
    if (body.size() > 1) body += ",";
    body += "{\"action\":" + json::Quote(rule.action) + ",\"target\":" + json::Quote(rule.target) + "}";
  }
  return body + "]";
}

std::string EgressClient::DeleteBody(const std::vector<std::string>& targets) {
  return json::ArrayOfStrings(targets);
}

Result<HttpAnswer> EgressClient::Send(const std::string& method, std::string body, const CancelToken* cancel,
                                      std::string_view what) {
  HttpCall call;
  call.method = method;
  call.url = http::JoinUrl(base_url_, "/policy");
  call.headers = headers_;
  if (!body.empty()) call.headers.emplace_back("Content-Type", "application/json");
  call.body = std::move(body);
  call.timeout_ms = timeout_ms_;
  // A GET may be sent again; a change is sent once (a repeat of a PATCH is harmless,
  // but its first answer may have been a refusal worth reading).
  call.idempotent = method == "GET";
  call.any_status = true;
  return http_->Send(call, cancel, what);
}

Result<EgressPolicy> EgressClient::Get(const CancelToken* cancel) {
  constexpr std::string_view kWhat = "read egress rules";
  ABX_ASSIGN_OR_RETURN(HttpAnswer answer, Send("GET", "", cancel, kWhat));
  if (answer.status != 200) return Refusal(answer, kWhat, "1.0.0");
  rapidjson::Document doc;
  doc.Parse<json::kParseFlags>(answer.body.c_str(), answer.body.size());
  if (doc.HasParseError() || !doc.IsObject()) return NotItsApi(kWhat);
  EgressPolicy policy;
  auto mode = json::GetString(doc, "mode");
  const rapidjson::Value* body = json::GetMember(doc, "policy");
  if (!mode || !body || !(body->IsObject() || body->IsNull())) return NotItsApi(kWhat);
  policy.mode = *mode;
  policy.enforcement = json::GetString(doc, "enforcementMode").value_or("");
  policy.default_action = "deny";  // as the sidecar reads an unset one
  if (body->IsObject()) {
    if (auto action = json::GetString(*body, "defaultAction"); action && !action->empty()) policy.default_action = *action;
    const rapidjson::Value* egress = json::GetMember(*body, "egress");
    if (egress && egress->IsArray()) {
      for (const auto& item : egress->GetArray()) {
        if (!item.IsObject()) return NotItsApi(kWhat);
        auto action = json::GetString(item, "action");
        auto target = json::GetString(item, "target");
        if (!action || !target) return NotItsApi(kWhat);
        policy.rules.push_back({*action, *target});
      }
    } else if (egress && !egress->IsNull()) {
      return NotItsApi(kWhat);
    }
  }
  return policy;
}

Status EgressClient::Patch(const std::vector<EgressRule>& rules, const CancelToken* cancel) {
  constexpr std::string_view kWhat = "change egress rules";
  ABX_ASSIGN_OR_RETURN(HttpAnswer answer, Send("PATCH", PatchBody(rules), cancel, kWhat));
  if (answer.status != 200) return Refusal(answer, kWhat, "1.0.2");
  return OkStatus();
}

Status EgressClient::Delete(const std::vector<std::string>& targets, const CancelToken* cancel) {
  constexpr std::string_view kWhat = "remove egress rules";
  ABX_ASSIGN_OR_RETURN(HttpAnswer answer, Send("DELETE", DeleteBody(targets), cancel, kWhat));
  if (answer.status != 200) return Refusal(answer, kWhat, "1.0.13");
  return OkStatus();
}

}  // namespace abx::opensandbox
