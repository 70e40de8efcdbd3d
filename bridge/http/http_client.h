#pragma once
// The bridge's one HTTP/1.1 client, shared by every session and thread, for the lifecycle
// server and every execd.
//
// Design. All transfers run on one curl multi handle driven by one I/O thread, so the
// multi's connection cache holds every idle keep-alive connection and reuses it for the
// next request to the same host, whichever session or thread sends it. The obvious
// alternative, easy handles on many threads sharing one connection cache through a CURLSH
// (CURL_LOCK_DATA_CONNECT), is unsupported by libcurl ("It is not supported to share
// connections between multiple concurrent threads", CURLSHOPT_SHARE(3); KNOWN_BUGS "A
// shared connection cache is not thread-safe", with crashes reported up to 8.x), so it is
// not used. A CURLSH share still holds the DNS cache and TLS sessions, with a mutex per
// lock_data.
//
// Callers block in Send/Stream on their own thread; callbacks run on that thread, never on
// the I/O thread, so a slow consumer never stalls other transfers. A stream's bytes are
// handed over in large blocks through a bounded queue; when the consumer falls behind the
// queue fills and the transfer is paused (CURL_WRITEFUNC_PAUSE) until it drains, so memory
// stays bounded and the server is slowed by TCP flow control.
//
// Cancellation: while a call runs, a watch on its CancelFlag (cancel_flag.h) marks the
// transfer stopped and wakes the I/O thread, which drops it at once
// (curl_multi_remove_handle) and wakes the caller. Nothing polls: the abort latency is one
// turn of the I/O thread's loop, whatever the transfer is doing, and a waiting caller
// sleeps until something happens to its transfer (or its stream's idle limit is due).
//
// Secrets: request headers are never logged or copied into an error; error messages name
// the method and the URL without its query or user info.

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "bridge/base/body_source.h"
#include "bridge/base/cancel_flag.h"
#include "bridge/http/header_map.h"
#include "bridge/http/transport_error.h"

namespace abx::http {

struct Request {
  std::string method = "GET";  // sent as given: GET, POST, PUT, PATCH, DELETE, HEAD, ...
  std::string url;             // full URL, http:// or https://
  HeaderList headers;          // sent in order; may hold secrets
  std::string body;            // sent when non-empty, and always for POST/PUT/PATCH
  // Instead of `body`: bytes owned by the caller, which must stay valid until the call
  // returns. For multi-MiB uploads, so they are not copied into the request.
  std::optional<std::string_view> borrowed_body;
  // Instead of both: a body made while it is sent (body_source.h), with chunked transfer
  // encoding. Send only; never sent twice, so a connection that turns out dead fails the
  // call instead of retrying it.
  std::shared_ptr<BodySource> body_source;
  int64_t timeout_ms = 30000;         // Send: the whole exchange; 0 = none. Not used by Stream.
  int64_t connect_timeout_ms = 5000;  // both; 0 = curl's default (300 s)
  // Stream: fail when no byte was received or sent for this long (counted from the start,
  // so it also bounds waiting for the response head); 0 = none. Send with timeout_ms 0:
  // fail when the transfer moved less than a byte a second for this long (curl's low
  // speed limit), for uploads of any length.
  int64_t idle_timeout_ms = 30000;
  // Stream: when a callback stops the transfer, the rest of the response is still read
  // (and dropped) on the I/O thread for at most this long, so that a server that ends the
  // response soon after (execd's ~1 s grace after a command's last event) leaves a
  // connection that can be reused; the caller returns at once either way. 0 = drop the
  // connection at once. A request that drains is copied into the transfer.
  int64_t drain_ms = 0;

  std::string_view BodyView() const { return borrowed_body ? *borrowed_body : body; }
};

struct Response {
  int status = 0;
  HeaderMap headers;  // of the final response; those of a 1xx interim response are dropped
  std::string body;

  // The first value of header `name` (any case), or "".
  std::string Header(std::string_view name) const { return headers.Get(name); }
};

// What a Stream call saw.
struct StreamSummary {
  int status = 0;
  HeaderMap headers;
  uint64_t body_bytes = 0;  // bytes handed to on_data
  bool stopped = false;     // a callback returned false: the connection was dropped, or
                            // is being drained (Request::drain_ms)
};

struct HttpClientOptions {
  // Idle keep-alive connections kept for reuse (curl's CURLMOPT_MAXCONNECTS).
  size_t connection_cache_size = 64;
  // curl's receive buffer per transfer (CURLOPT_BUFFERSIZE): large, for fast streams.
  size_t receive_buffer_bytes = 256 << 10;
  // Upload buffer per transfer (CURLOPT_UPLOAD_BUFFERSIZE).
  size_t upload_buffer_bytes = 256 << 10;
  // Bytes a stream may queue for its consumer before the transfer is paused.
  size_t stream_queue_bytes = 8 << 20;
  // Honour http_proxy / https_proxy / no_proxy from the environment (curl's default).
  bool use_environment_proxy = true;
  // Verify TLS peers and host names (https only).
  bool verify_tls = true;
  // TCP keep-alive probes on idle connections: first after this many seconds.
  int tcp_keepalive_idle_s = 30;
};

class HttpClient {
 public:
  // Starts the I/O thread. Nullptr with `error` set if curl cannot be set up.
  static std::unique_ptr<HttpClient> Create(const HttpClientOptions& options,
                                            std::string* error);

  // Must outlive every call. As a backstop for an orderly shutdown, transfers still running
  // are failed with kCancelled ("the HTTP client is shutting down") and new ones refused.
  ~HttpClient();
  HttpClient(const HttpClient&) = delete;
  HttpClient& operator=(const HttpClient&) = delete;

  // One ordinary exchange: the whole response body in memory. Thread-safe. `cancel` may
  // be null. An HTTP error status is a Response, not an error.
  TransportResult<Response> Send(const Request& request, const CancelFlag* cancel);

  // For SSE and large downloads: `on_headers` (may be null) sees the final status and
  // headers, then `on_data` every piece of the body as it arrives, nothing buffered beyond
  // the stream queue. Both run on the calling thread; returning false from either stops the
  // transfer at once (ok, with stopped = true). When the transfer fails after the head
  // arrived, the callbacks have seen everything received before the failure, and the
  // error's status is the response's. A cancel or the idle limit drops the rest. Thread-safe.
  using HeadersCallback = std::function<bool(int status, const HeaderMap& headers)>;
  using DataCallback = std::function<bool(const char* data, size_t size)>;
  TransportResult<StreamSummary> Stream(const Request& request, const HeadersCallback& on_headers,
                                        const DataCallback& on_data, const CancelFlag* cancel);

  // For the bridge's stats. Monotonic.
  struct Counters {
    std::atomic<int64_t> requests_sent{0};        // transfers started
    std::atomic<int64_t> connections_opened{0};   // new TCP connections (CURLINFO_NUM_CONNECTS)
    std::atomic<int64_t> stream_pauses{0};        // a stream's consumer fell behind
    std::atomic<int64_t> transfers_active{0};     // running now (a gauge, not monotonic)
    std::atomic<int64_t> drains_completed{0};     // stopped streams read to their end
    std::atomic<int64_t> drains_abandoned{0};     // ... that broke or outlasted drain_ms
  };
  const Counters& counters() const { return counters_; }

 private:
  struct Transfer;
  class Curl;  // the libcurl handles, touched only by the I/O thread

  explicit HttpClient(const HttpClientOptions& options);
  bool Start(std::string* error);

  // Queues `transfer` for the I/O thread; false (and `transfer` finished with kCancelled)
  // when the client is shutting down.
  bool Submit(const std::shared_ptr<Transfer>& transfer);
  // Asks the I/O thread to look at its transfers again (stop requests, unpausing).
  void Wake();
  // A CancelFlag's wake-up: marks `transfer` cancelled unless it was stopped already, and
  // wakes the I/O thread, which drops it and wakes its caller. Takes no lock of ours.
  void StopForCancel(Transfer* transfer);
  TransportError ErrorOf(const Transfer& transfer) const;
  // Finishes a transfer that was never submitted, its flag being set already.
  TransportError Cancelled(Transfer& transfer) const;
  void Run();  // the I/O thread

  const HttpClientOptions options_;
  Counters counters_;
  std::unique_ptr<Curl> curl_;
  std::mutex queue_mu_;
  std::vector<std::shared_ptr<Transfer>> queue_;  // submitted, not yet added to the multi
  bool stopping_ = false;
  std::thread thread_;
};

}  // namespace abx::http
