// ExecdClient's code interpreter calls (docs/opensandbox.md §2.14): contexts, a run's
// event stream, the interrupt. The rest of ExecdClient is in execd_client.cc.
#include <rapidjson/document.h>

#include "bridge/base/json.h"
#include "bridge/http/url.h"
#include "bridge/opensandbox/execd_client.h"
#include "common/percent_encoding.h"

namespace abx::opensandbox {
namespace {

Error NotItsApi(const std::string& what) {
  return MakeError(ErrorCode::kUpstream, what + ": execd answered something that is not its API");
}

}  // namespace

Result<CodeContextInfo> DecodeCodeContext(const rapidjson::Value& value) {
  if (!value.IsObject()) return NotItsApi("code context");
  auto id = json::GetString(value, "id");
  if (!id || id->empty()) return NotItsApi("code context");
  return CodeContextInfo{*id, json::GetString(value, "language").value_or("")};
}

Result<std::vector<CodeContextInfo>> DecodeCodeContexts(const std::string& body) {
  rapidjson::Document doc;
  doc.Parse<json::kParseFlags>(body.c_str(), body.size());
  if (doc.HasParseError() || !(doc.IsArray() || doc.IsNull())) return NotItsApi("code contexts");
  std::vector<CodeContextInfo> out;
  if (doc.IsNull()) return out;  // Go's empty slice
  for (auto& item : doc.GetArray()) {
    auto context = DecodeCodeContext(item);
    if (!context.ok()) return context.error().Within("code contexts");
    out.push_back(std::move(context).value());
  }
  return out;
}

Result<CodeContextInfo> ExecdClient::CreateCodeContext(const std::string& language,
                                                       const std::string& cwd,
                                                       const CancelToken* cancel) {
  HttpCall call = Call("POST", "/code/context");
  call.headers.emplace_back("Content-Type", "application/json");
  call.body = "{\"language\":" + json::Quote(language) +
              (cwd.empty() ? std::string() : ",\"cwd\":" + json::Quote(cwd)) + "}";
  auto answer = http_->Send(call, cancel, "create code context");
  if (!answer.ok()) return answer.error();
  rapidjson::Document doc;
  doc.Parse<json::kParseFlags>(answer->body.c_str(), answer->body.size());
  if (doc.HasParseError()) return NotItsApi("create code context");
  return DecodeCodeContext(doc);
}

Result<std::vector<CodeContextInfo>> ExecdClient::ListCodeContexts(const std::string& language,
                                                                   const CancelToken* cancel) {
  HttpCall call = Call("GET", language.empty() ? std::string("/code/contexts")
                                               : "/code/contexts?language=" + PercentEncode(language));
  call.idempotent = true;
  auto answer = http_->Send(call, cancel, "list code contexts");
  if (!answer.ok()) return answer.error();
  return DecodeCodeContexts(answer->body);
}

Result<bool> ExecdClient::DeleteCodeContext(const std::string& context_id, const CancelToken* cancel) {
  HttpCall call = Call("DELETE", "/code/contexts/" + PercentEncode(context_id));
  auto answer = http_->Send(call, cancel, "delete code context");
  if (!answer.ok()) {
    if (answer.error().http_status == 404) return false;
    return answer.error();
  }
  return true;
}

Status ExecdClient::RunCode(const std::string& body_json, const CancelToken* cancel,
                            int64_t idle_timeout_ms,
                            const std::function<bool(const ExecdEvent&)>& on_event) {
  HttpCall call = Call("POST", "/code");
  call.headers.emplace_back("Accept", "text/event-stream");
  call.headers.emplace_back("Content-Type", "application/json");
  call.body = body_json;
  call.idle_timeout_ms = idle_timeout_ms;

  bool stopped = false;
  std::string garbage;
  ExecdEventParser parser(
      [&](const ExecdEvent& event) {
        if (!on_event(event)) {
          stopped = true;
          return false;
        }
        return true;
      },
      [&](std::string_view line, std::string_view reason) {
        garbage = std::string(reason) + ": " + std::string(line.substr(0, 80));
        return false;
      });
  auto answer = http_->Stream(call, cancel, "run code", [&](const char* data, size_t size) {
    return parser.Feed(data, size);
  });
  if (!garbage.empty()) {
    return MakeError(ErrorCode::kUpstream, "run code: execd's event stream held " + garbage);
  }
  if (stopped) return OkStatus();
  if (!answer.ok()) return answer.error();
  parser.Finish();
  if (!garbage.empty()) {
    return MakeError(ErrorCode::kUpstream, "run code: execd's event stream held " + garbage);
  }
  return OkStatus();
}

Status ExecdClient::InterruptCode(const std::string& context_id, const CancelToken* cancel) {
  HttpCall call = Call("DELETE", "/code?id=" + PercentEncode(context_id));
  auto answer = http_->Send(call, cancel, "interrupt code");
  if (!answer.ok()) return answer.error();
  return OkStatus();
}

}  // namespace abx::opensandbox
