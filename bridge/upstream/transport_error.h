#pragma once
// How an upstream HTTP exchange can fail below the HTTP layer, and the value-or-error type
// the client returns. An HTTP error status (404, 500) is not a TransportError: it is a
// Response like any other.

#include <optional>
#include <string>
#include <utility>

namespace abx::upstream {

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

// A value or a TransportError.
template <typename T>
class TransportResult {
 public:
  TransportResult(T value) : value_(std::move(value)) {}                 // NOLINT: implicit
  TransportResult(TransportError error) : error_(std::move(error)) {}    // NOLINT: implicit

  bool ok() const { return value_.has_value(); }
  const T& value() const& { return *value_; }
  T& value() & { return *value_; }
  T&& value() && { return std::move(*value_); }
  const T* operator->() const { return &*value_; }
  T* operator->() { return &*value_; }
  const T& operator*() const { return *value_; }
  const TransportError& error() const { return error_; }

 private:
  std::optional<T> value_;
  TransportError error_;
};

}  // namespace abx::upstream
