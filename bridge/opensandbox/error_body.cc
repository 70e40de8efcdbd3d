#include "bridge/opensandbox/error_body.h"

#include <rapidjson/document.h>

#include "bridge/base/json.h"

namespace abx::opensandbox {
namespace {

// Reads the server's own words from an error body, whatever of its three shapes it has.
// Returns false when the body is not one of the API's error shapes.
bool ReadErrorBody(std::string_view body, std::string* text, std::string* code_out) {
  rapidjson::Document doc;
  doc.Parse<json::kParseFlags>(body.data(), body.size());
  if (doc.HasParseError() || !doc.IsObject()) return false;
  auto str = [&](const char* key) -> std::string {
    auto it = doc.FindMember(key);
    return it != doc.MemberEnd() && it->value.IsString() ? it->value.GetString() : "";
  };
  if (doc.HasMember("code") || doc.HasMember("message")) {
    std::string code = str("code"), message = str("message");
    *code_out = code;
    *text = code.empty() ? message : message.empty() ? code : code + ": " + message;
    return true;
  }
  if (doc.HasMember("error")) {  // execd 401
    *text = str("error");
    return true;
  }
  auto detail = doc.FindMember("detail");  // FastAPI: a string or a list of problems
  if (detail != doc.MemberEnd()) {
    if (detail->value.IsString()) {
      *text = detail->value.GetString();
    } else if (detail->value.IsArray() && !detail->value.Empty() &&
               detail->value[0].IsObject() && detail->value[0].HasMember("msg") &&
               detail->value[0]["msg"].IsString()) {
      *text = std::string("invalid request: ") + detail->value[0]["msg"].GetString();
    } else {
      *text = "invalid request";
    }
    return true;
  }
  return false;
}

// What the server's runtime cannot provide, whatever the status: a volume it refuses or
// cannot mount (VOLUME::*) and a pool on a runtime without pools (docs/epp1.md §3,
// "sandbox.metadata extension, volumes, server-side pools").
bool RuntimeCannot(const std::string& code) {
  return code.rfind("VOLUME::", 0) == 0 || code == "SANDBOX::UNSUPPORTED_POOL_REF";
}

}  // namespace

Error FromHttpStatus(int http_status, std::string_view body, std::string request_id,
                     std::string_view what) {
  std::string text, code;
  const bool api_body = ReadErrorBody(body, &text, &code);
  Error error;
  error.http_status = http_status;
  error.request_id = std::move(request_id);
  if (!api_body) {
    error.code = ErrorCode::kUpstream;
    error.message = std::string(what) + ": the server answered HTTP " +
                    std::to_string(http_status) + " with a body that is not its API";
    error.retryable = http_status >= 500;
    return error;
  }
  if (http_status == 401 || http_status == 403) {
    error.code = ErrorCode::kAuth;
  } else if (http_status == 404) {
    error.code = ErrorCode::kNotFound;
  } else if (http_status == 409 || RuntimeCannot(code)) {
    error.code = ErrorCode::kInvalidState;
  } else {
    error.code = ErrorCode::kUpstream;
    error.retryable = http_status >= 500;
  }
  error.message = std::string(what) + ": the server answered HTTP " +
                  std::to_string(http_status) + (text.empty() ? "" : " (" + text + ")");
  return error;
}

}  // namespace abx::opensandbox
