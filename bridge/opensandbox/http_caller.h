#pragma once
// HTTP as OpenSandbox's clients use it: one call, one answer, errors already mapped to
// EPP codes (connection refused or a body cut short → E8002, deadline → E8006, cancelled →
// E8009, a reply that is not HTTP → E8010, an error answer by error_body.h), idempotent
// calls retried. Built on the shared, pooled client of bridge/http.

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "bridge/base/body_source.h"
#include "bridge/base/cancel.h"
#include "bridge/base/error.h"
#include "bridge/http/websocket_client.h"

namespace abx::http {
class HttpClient;
}

namespace abx::opensandbox {

using Headers = std::vector<std::pair<std::string, std::string>>;

struct HttpCall {
  std::string method = "GET";
  std::string url;
  Headers headers;  // may hold secrets: never logged, never in an error
  std::string body;
  // Instead of `body`: one made while it is sent (bridge/base/body_source.h); Send only.
  std::shared_ptr<BodySource> body_source;
  int64_t timeout_ms = 30000;        // whole exchange (Send)
  int64_t idle_timeout_ms = 30000;   // no byte for this long (Stream)
  int64_t connect_timeout_ms = 5000;
  // Stream: after on_data stops, the rest of the response is read and dropped in the
  // background for at most this long, so the connection is kept (http::Request).
  int64_t drain_ms = 0;
  // Safe to send again: a transient failure (no connection, a connection dropped
  // mid-answer, 502/503/504) is retried a few times with backoff. Never set for calls
  // that change state in a way a repeat would double (create, exec, write).
  bool idempotent = false;
  // Send: an answer that is not a success comes back as it is (after the retries above),
  // for a service whose errors are not OpenSandbox's shapes (the egress sidecar's text).
  bool any_status = false;
};

struct HttpAnswer {
  int status = 0;
  std::string body;
  std::map<std::string, std::string> headers;  // names lower-cased

  std::string Header(const std::string& lower_name) const {
    auto it = headers.find(lower_name);
    return it == headers.end() ? std::string() : it->second;
  }
};

class HttpCaller {
 public:
  // A caller over its own pooled client (bridge/http/http_client.h), started.
  static Result<std::unique_ptr<HttpCaller>> Create();
  ~HttpCaller();

  // `what` names the operation in error messages ("get sandbox").
  Result<HttpAnswer> Send(const HttpCall& call, const CancelToken* cancel, std::string_view what);

  // Streams the body to `on_data` (return false to stop); `on_status` (may be null)
  // sees a 2xx status before the body. For a non-2xx status the body is collected and
  // returned instead.
  Result<HttpAnswer> Stream(const HttpCall& call, const CancelToken* cancel, std::string_view what,
                            const std::function<bool(const char*, size_t)>& on_data,
                            const std::function<void(int status)>& on_status = nullptr);

  // A WebSocket (execd's terminals). A declined upgrade is a result with its status and
  // body; a transport failure is the error it would be for an HTTP call.
  Result<http::WebSocketOpened> OpenWebSocket(const http::WebSocketRequest& request, http::WebSocket::Handlers handlers,
                                              const CancelToken* cancel, std::string_view what);
  size_t open_websockets() const { return websockets_.open_connections(); }

  // The client underneath, for its counters.
  http::HttpClient* client() { return client_.get(); }
  // Requests sent and connections opened since the start, for the bridge's stats.
  int64_t requests_sent() const;
  int64_t connections_opened() const;

 private:
  explicit HttpCaller(std::unique_ptr<http::HttpClient> client);
  std::unique_ptr<http::HttpClient> client_;
  http::WebSocketClient websockets_;
};

}  // namespace abx::opensandbox
