#pragma once
// The one error type of the bridge. Every layer above HTTP that can fail returns
// Result<T>; an Error carries an EPP code (what the host sees) and the context every layer
// added. How codes map to JSON-RPC and gRPC lives in error_codes.h, nowhere else; how an
// upstream HTTP answer becomes one, in bridge/opensandbox/error_body.h.

#include <string>
#include <utility>

#include "common/result.h"

namespace abx {

// EPP/1 error codes (docs/epp1.md §4), plus the JSON-RPC codes the host also sees.
enum class ErrorCode {
  kNotInitialized,   // E8001: not initialized, protocol mismatch, internal fault
  kUnreachable,      // E8002: server, execd or the bridge unreachable
  kAuth,             // E8003: authentication or authorization refused
  kUnsupported,      // E8004: feature or option not supported
  kNotFound,         // E8005: sandbox, command or path not found
  kTimeout,          // E8006: ready_timeout, request deadline
  kInvalidState,     // E8007: paused, terminated, runtime cannot
  kTooLarge,         // E8008: line limit, write payload
  kCancelled,        // E8009: cancelled by $/cancel
  kUpstream,         // E8010: the server answered an error or something not its API
  kParse,            // -32700
  kInvalidRequest,   // -32600
  kMethodNotFound,   // -32601
  kInvalidParams,    // -32602
};

struct Error {
  ErrorCode code = ErrorCode::kNotInitialized;
  std::string message;  // one human sentence; never a secret
  int http_status = 0;  // upstream HTTP status when there was one
  std::string request_id;  // the server's X-Request-ID
  std::string field;       // the offending param or config field
  std::string errno_name;  // a local file's error: the errno's name ("ENOSPC")
  // More members of EPP's error.data, as JSON members without the braces
  // ("\"step\":1,\"exit_code\":2"): what one method's error adds (templates.build).
  std::string extra_data_json;
  bool retryable = false;

  // Prefixes context, as each layer crossing the error does: "create sandbox: <message>".
  Error& Within(const std::string& context) {
    message = context + ": " + message;
    return *this;
  }
};

inline Error MakeError(ErrorCode code, std::string message) {
  Error e;
  e.code = code;
  e.message = std::move(message);
  return e;
}

inline Error InvalidParams(std::string field, std::string message) {
  Error e = MakeError(ErrorCode::kInvalidParams, std::move(message));
  e.field = std::move(field);
  return e;
}

// A value or an Error (common/result.h).
template <typename T>
using Result = BasicResult<T, Error>;

// For operations that return nothing but may fail.
struct Ok {};
using Status = Result<Ok>;
inline Status OkStatus() { return Ok{}; }

}  // namespace abx
