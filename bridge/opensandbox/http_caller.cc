#include "bridge/opensandbox/http_caller.h"

#include <cctype>
#include <chrono>
#include <thread>

#include "bridge/http/http_client.h"
#include "bridge/opensandbox/error_body.h"

namespace abx::opensandbox {
namespace {

http::Request ToRequest(const HttpCall& call) {
  http::Request request;
  request.method = call.method;
  request.url = call.url;
  request.headers = call.headers;
  request.borrowed_body = std::string_view(call.body);
  request.body_source = call.body_source;
  request.timeout_ms = call.timeout_ms;
  request.idle_timeout_ms = call.idle_timeout_ms;
  request.connect_timeout_ms = call.connect_timeout_ms;
  request.drain_ms = call.drain_ms;
  return request;
}

std::map<std::string, std::string> Lowered(const http::HeaderMap& headers) {
  std::map<std::string, std::string> out;
  for (const auto& [name, value] : headers.entries()) {
    std::string lower;
    for (char c : name) lower += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    out.emplace(std::move(lower), value);  // the first of repeated names wins
  }
  return out;
}

Error FromTransport(const http::TransportError& t, std::string_view what) {
  Error e;
  e.message = std::string(what) + ": " + t.message;
  e.http_status = t.status;
  switch (t.kind) {
    case http::TransportErrorKind::kUnreachable:
      e.code = ErrorCode::kUnreachable;
      e.retryable = true;
      break;
    case http::TransportErrorKind::kTimeout:
      e.code = ErrorCode::kTimeout;
      e.retryable = true;
      break;
    case http::TransportErrorKind::kCancelled:
      e.code = ErrorCode::kCancelled;
      break;
    case http::TransportErrorKind::kBrokenStream:
      e.code = ErrorCode::kUnreachable;
      e.retryable = true;
      break;
    case http::TransportErrorKind::kOther:
      e.code = ErrorCode::kUpstream;
      break;
  }
  return e;
}

bool Success(int status) { return status >= 200 && status < 300; }

// The server proxy's own 500 (upstream's proxy.py, any exception but a refused
// connection): seen when it reused a connection on which an event stream was still
// arriving and read an event as the status line (docs/opensandbox.md §1.10). Nothing says
// the sandbox did not see the request, so only an idempotent call is sent again.
bool ProxyFailedItself(int status, const std::string& body) {
  return status == 500 && body.find("An internal error occurred in the proxy") != std::string::npos;
}

// Retries of idempotent calls: 3 attempts in all, 100 ms then 300 ms apart, so a
// transient fault costs at most ~0.4 s more and a dead server is reported quickly.
constexpr int kMaxAttempts = 3;

// Waits before the next attempt; false when cancelled meanwhile.
bool Backoff(int attempt, const CancelToken* cancel) {
  const auto pause = std::chrono::milliseconds(attempt == 0 ? 100 : 300);
  if (cancel) return cancel->SleepFor(pause);
  std::this_thread::sleep_for(pause);
  return true;
}

}  // namespace

Result<std::unique_ptr<HttpCaller>> HttpCaller::Create() {
  std::string error;
  auto client = http::HttpClient::Create(http::HttpClientOptions(), &error);
  if (!client) return MakeError(ErrorCode::kNotInitialized, "HTTP client: " + error);
  return std::unique_ptr<HttpCaller>(new HttpCaller(std::move(client)));
}

HttpCaller::HttpCaller(std::unique_ptr<http::HttpClient> client) : client_(std::move(client)) {}

HttpCaller::~HttpCaller() = default;

Result<http::WebSocketOpened> HttpCaller::OpenWebSocket(const http::WebSocketRequest& request,
                                                        http::WebSocket::Handlers handlers, const CancelToken* cancel,
                                                        std::string_view what) {
  auto opened = websockets_.Connect(request, std::move(handlers), cancel ? cancel->flag() : nullptr);
  if (!opened.ok()) return FromTransport(opened.error(), what);
  return std::move(opened).value();
}

int64_t HttpCaller::requests_sent() const { return client_->counters().requests_sent.load(); }

int64_t HttpCaller::connections_opened() const {
  return client_->counters().connections_opened.load();
}

Result<HttpAnswer> HttpCaller::Send(const HttpCall& call, const CancelToken* cancel,
                              std::string_view what) {
  const http::Request request = ToRequest(call);
  for (int attempt = 0;; ++attempt) {
    auto response = client_->Send(request, cancel ? cancel->flag() : nullptr);
    const bool last = !call.idempotent || attempt + 1 >= kMaxAttempts;
    if (!response.ok()) {
      const auto kind = response.error().kind;
      const bool transient = kind == http::TransportErrorKind::kUnreachable ||
                             kind == http::TransportErrorKind::kBrokenStream;
      if (last || !transient || !Backoff(attempt, cancel)) {
        return FromTransport(response.error(), what);
      }
      continue;
    }
    HttpAnswer answer;
    answer.status = response->status;
    answer.headers = Lowered(response->headers);
    answer.body = std::move(response.value().body);
    if (Success(answer.status)) return answer;
    const bool transient = answer.status == 502 || answer.status == 503 || answer.status == 504 ||
                           ProxyFailedItself(answer.status, answer.body);
    if (last || !transient || !Backoff(attempt, cancel)) {
      if (call.any_status) return answer;
      return FromHttpStatus(answer.status, answer.body, answer.Header("x-request-id"), what);
    }
  }
}

Result<HttpAnswer> HttpCaller::Stream(const HttpCall& call, const CancelToken* cancel,
                                std::string_view what,
                                const std::function<bool(const char*, size_t)>& on_data,
                                const std::function<void(int status)>& on_status) {
  HttpAnswer answer;
  auto summary = client_->Stream(
      ToRequest(call),
      [&](int status, const http::HeaderMap& headers) {
        answer.status = status;
        answer.headers = Lowered(headers);
        if (on_status && Success(status)) on_status(status);
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

}  // namespace abx::opensandbox
