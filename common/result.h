#pragma once
// A value or an error: the one value-or-error type of the project. The bridge's layers
// name it for their own error type (bridge/base/error.h `Result<T>` with an EPP Error,
// bridge/http/transport_error.h `TransportResult<T>`). Small on purpose: ok(), value(),
// error(), and moving out. Dependency-free, like all of common/.

#include <optional>
#include <utility>

namespace abx {

template <typename T, typename E>
class BasicResult {
 public:
  BasicResult(T value) : value_(std::move(value)) {}   // NOLINT: implicit by design
  BasicResult(E error) : error_(std::move(error)) {}   // NOLINT

  bool ok() const { return value_.has_value(); }
  const T& value() const& { return *value_; }
  T& value() & { return *value_; }
  T&& value() && { return std::move(*value_); }
  const E& error() const { return error_; }
  E& error() { return error_; }
  const T* operator->() const { return &*value_; }
  T* operator->() { return &*value_; }
  const T& operator*() const { return *value_; }
  T& operator*() { return *value_; }

 private:
  std::optional<T> value_;
  E error_;
};

}  // namespace abx

// Unwraps a result into `lhs` or returns its error from the enclosing function.
#define ABX_CONCAT_INNER(a, b) a##b
#define ABX_CONCAT(a, b) ABX_CONCAT_INNER(a, b)
#define ABX_ASSIGN_OR_RETURN(lhs, expr)                              \
  auto ABX_CONCAT(result_, __LINE__) = (expr);                       \
  if (!ABX_CONCAT(result_, __LINE__).ok()) {                         \
    return std::move(ABX_CONCAT(result_, __LINE__).error());         \
  }                                                                  \
  lhs = std::move(ABX_CONCAT(result_, __LINE__)).value()
