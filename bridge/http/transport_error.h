#pragma once
// How an upstream HTTP exchange can fail below the HTTP layer, and the value-or-error type
// the client returns. An HTTP error status (404, 500) is not a TransportError: it is a
// Response like any other.

#include <string>

#include "common/result.h"

namespace abx::http {

enum class TransportErrorKind {
  kUnreachable,   // could not resolve the host, connection refused, or no connection in time
  kTimeout,       // connected, but the deadline (Send) or the idle limit (Stream) passed
  kCancelled,     // the CancelFlag was set, or the client is shutting down
  kBrokenStream,  // reset, or closed before the response was complete
  kOther,         // TLS failure, malformed URL or reply, out of memory, ...
};

// "unreachable", "timeout", "cancelled", "broken_stream", "other".
const char* TransportErrorKindName(TransportErrorKind kind);

struct TransportError {
  TransportErrorKind kind = TransportErrorKind::kOther;
  // One plain sentence: method, URL without query or user info, what went wrong and curl's
  // detail. Never a header value (headers carry the API key and the execd token).
  std::string message;
  // The HTTP status when the response head had arrived before the failure, else 0.
  int status = 0;
};

// A value or a TransportError (common/result.h).
template <typename T>
using TransportResult = BasicResult<T, TransportError>;

}  // namespace abx::http
