#include "bridge/core/http.h"

#include <cctype>

#include "bridge/core/error_mapping.h"
#include "bridge/upstream/http_client.h"

namespace abx::core {
namespace {

upstream::Request ToRequest(const HttpCall& call) {
  upstream::Request request;
  request.method = call.method;
  request.url = call.url;
  request.headers = call.headers;
  request.borrowed_body = std::string_view(call.body);
  request.timeout_ms = call.timeout_ms;
  request.idle_timeout_ms = call.idle_timeout_ms;
  request.connect_timeout_ms = call.connect_timeout_ms;
  return request;
}

std::map<std::string, std::string> Lowered(const upstream::HeaderMap& headers) {
  std::map<std::string, std::string> out;
  for (const auto& [name, value] : headers.entries()) {
    std::string lower;
    for (char c : name) lower += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    out.emplace(std::move(lower), value);  // the first of repeated names wins
  }
  return out;
}

Error FromTransport(const upstream::TransportError& t, std::string_view what) {
  Error e;
  e.message = std::string(what) + ": " + t.message;
  e.http_status = t.status;
  switch (t.kind) {
    case upstream::TransportErrorKind::kUnreachable:
      e.code = ErrorCode::kUnreachable;
      e.retryable = true;
      break;
    case upstream::TransportErrorKind::kTimeout:
      e.code = ErrorCode::kTimeout;
      e.retryable = true;
      break;
    case upstream::TransportErrorKind::kCancelled:
      e.code = ErrorCode::kCancelled;
      break;
    case upstream::TransportErrorKind::kBrokenStream:
      e.code = ErrorCode::kUnreachable;
      e.retryable = true;
      break;
    case upstream::TransportErrorKind::kOther:
      e.code = ErrorCode::kUpstream;
      break;
  }
  return e;
}

bool Success(int status) { return status >= 200 && status < 300; }

}  // namespace

Result<HttpAnswer> Http::Send(const HttpCall& call, const CancelToken* cancel,
                              std::string_view what) {
  auto response = client_->Send(ToRequest(call), cancel ? cancel->flag() : nullptr);
  if (!response.ok()) return FromTransport(response.error(), what);
  HttpAnswer answer;
  answer.status = response->status;
  answer.headers = Lowered(response->headers);
  answer.body = std::move(response.value().body);
  if (!Success(answer.status)) {
    return FromHttpStatus(answer.status, answer.body, answer.Header("x-request-id"), what);
  }
  return answer;
}

Result<HttpAnswer> Http::Stream(const HttpCall& call, const CancelToken* cancel,
                                std::string_view what,
                                const std::function<bool(const char*, size_t)>& on_data) {
  HttpAnswer answer;
  auto summary = client_->Stream(
      ToRequest(call),
      [&](int status, const upstream::HeaderMap& headers) {
        answer.status = status;
        answer.headers = Lowered(headers);
        return true;
      },
      [&](const char* data, size_t size) {
        if (!Success(answer.status)) {
          // An error answer before any event: keep it whole to read the server's words.
          if (answer.body.size() < (1 << 20)) answer.body.append(data, size);
          return true;
        }
        return on_data(data, size);
      },
      cancel ? cancel->flag() : nullptr);
  if (!summary.ok()) return FromTransport(summary.error(), what);
  if (!Success(answer.status)) {
    return FromHttpStatus(answer.status, answer.body, answer.Header("x-request-id"), what);
  }
  return answer;
}

}  // namespace abx::core
