#include "bridge/core/error_mapping.h"

#include <rapidjson/document.h>

#include "bridge/core/json.h"

namespace abx::core {
namespace {

struct Row {
  ErrorCode code;
  int json_rpc;
  std::string_view epp;
  grpc::StatusCode grpc;
};

// clang-format off
constexpr Row kTable[] = {
    {ErrorCode::kNotInitialized, -32000, "E8001", grpc::StatusCode::FAILED_PRECONDITION},
    {ErrorCode::kUnreachable,    -32001, "E8002", grpc::StatusCode::UNAVAILABLE},
    {ErrorCode::kAuth,           -32002, "E8003", grpc::StatusCode::PERMISSION_DENIED},
    {ErrorCode::kUnsupported,    -32003, "E8004", grpc::StatusCode::UNIMPLEMENTED},
    {ErrorCode::kNotFound,       -32004, "E8005", grpc::StatusCode::NOT_FOUND},
    {ErrorCode::kTimeout,        -32005, "E8006", grpc::StatusCode::DEADLINE_EXCEEDED},
    {ErrorCode::kInvalidState,   -32006, "E8007", grpc::StatusCode::FAILED_PRECONDITION},
    {ErrorCode::kTooLarge,       -32007, "E8008", grpc::StatusCode::RESOURCE_EXHAUSTED},
    {ErrorCode::kCancelled,      -32008, "E8009", grpc::StatusCode::CANCELLED},
    {ErrorCode::kUpstream,       -32009, "E8010", grpc::StatusCode::UNKNOWN},
    {ErrorCode::kParse,          -32700, "",      grpc::StatusCode::INVALID_ARGUMENT},
    {ErrorCode::kInvalidRequest, -32600, "",      grpc::StatusCode::INVALID_ARGUMENT},
    {ErrorCode::kMethodNotFound, -32601, "",      grpc::StatusCode::UNIMPLEMENTED},
    {ErrorCode::kInvalidParams,  -32602, "",      grpc::StatusCode::INVALID_ARGUMENT},
};
// clang-format on

const Row& RowFor(ErrorCode code) {
  for (const Row& row : kTable) {
    if (row.code == code) return row;
  }
  return kTable[0];
}

// Reads the server's own words from an error body, whatever of its three shapes it has.
// Returns false when the body is not one of the API's error shapes.
bool ReadErrorBody(std::string_view body, std::string* text) {
  rapidjson::Document doc;
  doc.Parse<json::kParseFlags>(body.data(), body.size());
  if (doc.HasParseError() || !doc.IsObject()) return false;
  auto str = [&](const char* key) -> std::string {
    auto it = doc.FindMember(key);
    return it != doc.MemberEnd() && it->value.IsString() ? it->value.GetString() : "";
  };
  if (doc.HasMember("code") || doc.HasMember("message")) {
    std::string code = str("code"), message = str("message");
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

}  // namespace

int JsonRpcCode(ErrorCode code) { return RowFor(code).json_rpc; }

std::string_view EppCodeName(ErrorCode code) { return RowFor(code).epp; }

Error FromHttpStatus(int http_status, std::string_view body, std::string request_id,
                     std::string_view what) {
  std::string text;
  const bool api_body = ReadErrorBody(body, &text);
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
  } else if (http_status == 409) {
    error.code = ErrorCode::kInvalidState;
  } else {
    error.code = ErrorCode::kUpstream;
    error.retryable = http_status >= 500;
  }
  error.message = std::string(what) + ": the server answered HTTP " +
                  std::to_string(http_status) + (text.empty() ? "" : " (" + text + ")");
  return error;
}

grpc::Status ToGrpcStatus(const Error& error) {
  const Row& row = RowFor(error.code);
  std::string message = error.message;
  if (!row.epp.empty()) message = std::string(row.epp) + ": " + message;
  return grpc::Status(row.grpc, message);
}

}  // namespace abx::core
