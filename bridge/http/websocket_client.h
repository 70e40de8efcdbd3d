#pragma once
// WebSocket connections (RFC 6455) over plain TCP, for execd's terminals. Boost.Beast
// does the protocol; this is the only file pair of the bridge that knows it.
//
// Every connection's I/O runs on one thread of the client, started with its first
// connection: handlers run there, in order per connection, and must not block. A
// connection pings the server after 30 s of silence and counts as dead after 60 s
// without a frame. Sends are queued in order.

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "bridge/base/cancel_flag.h"
#include "bridge/http/transport_error.h"

namespace abx::http {

struct WebSocketRequest {
  std::string url;  // http://host:port/path?query: the ws:// URL spelled as HTTP
  std::vector<std::pair<std::string, std::string>> headers;  // sent with the handshake
  int64_t timeout_ms = 30000;  // for connecting and the handshake together
};

// How a connection ended.
struct WebSocketEnd {
  int close_code = 0;        // the peer's close frame; 0 when none came
  std::string close_reason;
  std::string error;         // what broke, when it did not end with a close frame
  // Messages queued by Send that it never began to write, in order (text?, payload).
  // One being written when the connection broke is in neither list: it may or may not
  // have arrived.
  std::vector<std::pair<bool, std::string>> unsent;
};

class WebSocket {
 public:
  struct Handlers {
    std::function<void(bool text, std::string payload)> on_message;
    std::function<void(const WebSocketEnd& end)> on_end;  // exactly once, after every message
    std::function<void()> on_sent;  // optional: a message queued by Send was written
  };
  virtual ~WebSocket() = default;
  // Queued; sent in order.
  virtual void Send(bool text, std::string payload) = 0;
  // A close frame (1000) once what is queued has gone.
  virtual void Close() = 0;
  // Drops the connection at once, without a close frame.
  virtual void Abort() = 0;
};

struct WebSocketOpened {
  std::shared_ptr<WebSocket> socket;  // null when the server declined the upgrade
  int status = 0;                     // then: its answer
  std::string body;
};

class WebSocketClient {
 public:
  WebSocketClient();
  // Drops every connection (their on_end runs) and joins the thread.
  ~WebSocketClient();
  WebSocketClient(const WebSocketClient&) = delete;
  WebSocketClient& operator=(const WebSocketClient&) = delete;

  // Connects and completes the handshake, blocking the caller for at most the
  // request's timeout; `cancel` (may be null) ends the wait. A declined upgrade is a
  // result (status and body), not an error. The handlers may start before this returns
  // (the first frames can come with the handshake's answer).
  TransportResult<WebSocketOpened> Connect(const WebSocketRequest& request, WebSocket::Handlers handlers,
                                           const CancelFlag* cancel);

  size_t open_connections() const;

  struct Impl;  // the I/O thread and the live connections (websocket_client.cc)

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace abx::http
