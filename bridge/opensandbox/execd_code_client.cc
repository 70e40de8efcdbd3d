// ExecdClient's code interpreter calls (docs/opensandbox.md §2.14): contexts, a run's
// event stream, the interrupt. The rest of ExecdClient is in execd_client.cc.
#include <rapidjson/document.h>

#include <algorithm>
#include <string_view>

#include "bridge/base/json.h"
#include "bridge/http/url.h"
#include "bridge/opensandbox/execd_client.h"
#include "common/percent_encoding.h"

namespace abx::opensandbox {
namespace {

// The code-interpreter image's Jupyter: its port inside the sandbox and the token its
// environment sets (JUPYTER_PORT, JUPYTER_TOKEN; docs/opensandbox.md §2.13). A sandbox
// created with another JUPYTER_TOKEN answers 403, which still says Jupyter is up.
constexpr int kJupyterPort = 44771;
constexpr char kJupyterToken[] = "opensandboxcodeinterpreterjupyter";

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

Result<JupyterKernels> DecodeKernelSpecs(const std::string& body) {
  rapidjson::Document doc;
  doc.Parse<json::kParseFlags>(body.c_str(), body.size());
  const rapidjson::Value* specs = doc.HasParseError() ? nullptr : json::GetMember(doc, "kernelspecs");
  if (specs == nullptr || !specs->IsObject()) return NotItsApi("Jupyter kernelspecs");
  JupyterKernels out;
  out.reached = JupyterKernels::Reached::kYes;
  for (auto& kernel : specs->GetObject()) {
    if (std::string_view(kernel.name.GetString(), kernel.name.GetStringLength()) == "python3") continue;
    const rapidjson::Value* spec = json::GetMember(kernel.value, "spec");
    if (spec == nullptr) continue;
    if (auto language = json::GetString(*spec, "language")) out.languages.push_back(*language);
  }
  return out;
}

Result<JupyterKernels> ExecdClient::ListJupyterKernels(const CancelToken* cancel, int64_t timeout_ms) {
  HttpCall call = Call("GET", std::string("/proxy/") + std::to_string(kJupyterPort) + "/api/kernelspecs");
  call.headers.emplace_back("Authorization", std::string("token ") + kJupyterToken);
  call.timeout_ms = timeout_ms;
  call.connect_timeout_ms = std::min<int64_t>(timeout_ms, 2000);
  auto answer = http_->Send(call, cancel, "list Jupyter kernels");
  if (!answer.ok()) {
    const int status = answer.error().http_status;
    JupyterKernels out;
    if (status == 401 || status == 403) {
      out.reached = JupyterKernels::Reached::kForbidden;  // up, with a token of its own
      return out;
    }
    // execd's proxy answers 502 while nothing listens on Jupyter's port.
    if (status == 502 || status == 503 || status == 504 ||
        answer.error().code == ErrorCode::kUnreachable || answer.error().code == ErrorCode::kTimeout) {
      return out;
    }
    return answer.error();
  }
  return DecodeKernelSpecs(answer->body);
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
  // The bare {"code","message"} object ends a run's stream when its context is busy:
  // passed on, for the caller to judge.
  return ReadEventStream(StreamCall("/code", body_json, idle_timeout_ms), cancel, "run code",
                         /*untyped_is_garbage=*/false, on_event, nullptr);
}

Status ExecdClient::InterruptCode(const std::string& context_id, const CancelToken* cancel) {
  HttpCall call = Call("DELETE", "/code?id=" + PercentEncode(context_id));
  auto answer = http_->Send(call, cancel, "interrupt code");
  if (!answer.ok()) return answer.error();
  return OkStatus();
}

}  // namespace abx::opensandbox
