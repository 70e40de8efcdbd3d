#pragma once

// A minimal gRPC client over one HTTP/2 connection (libnghttp2) on a Unix socket: the
// shim's transport to the bridge, whose real grpc++ server it talks to.
//
// What it speaks: requests as `POST /<package>.<Service>/<Method>`, `:scheme http`,
// `content-type: application/grpc`, `te: trailers` (plus `grpc-timeout` for a unary call
// with a deadline); length-prefixed messages both ways, never compressed; the status
// from the trailers (`grpc-status`, percent-encoded `grpc-message`), or from the only
// HEADERS of a trailers-only response, or from the HTTP status when there is none.
// RST_STREAM, a GOAWAY that excludes the call, end of file and HTTP/2 errors end the
// call with UNAVAILABLE (or CANCELLED, for a reset with CANCEL) and a message that says
// which; the shim reads all of them as "the bridge went away".
//
// One call at a time (Bridge.Hello, then EppSession.Run on the same connection). It is
// driven from outside: the owner polls fd() for poll_events() and passes what it got to
// OnPollEvents(), which reads and writes as far as it can without blocking and reports
// to the call's observer. CallUnary() drives itself (it blocks, with a deadline).
//
// Flow control: the receive windows are large (16 MiB for the stream and the
// connection, so an 8 MiB line never waits for a WINDOW_UPDATE round trip) and are given
// back by hand: while the owner holds them (HoldReceiveWindow(true): the host is not
// reading stdout), received bytes are not returned to the bridge, which stops sending
// once the window is used up. Sending is bounded the other way by the bridge's windows;
// what it does not take yet waits in queued_send_bytes().

#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <deque>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "common/limits.h"
#include "epp-shim/grpc_protocol.h"

struct nghttp2_session;

namespace abx {

// What one call brings. Callbacks come from inside OnPollEvents(), Cancel() or
// CallUnary(); they must not destroy the connection.
class GrpcCallObserver {
 public:
  virtual ~GrpcCallObserver() = default;
  // One message; `payload` is valid only during the call.
  virtual void OnMessage(std::string_view payload) = 0;
  // The call is over. Called exactly once per call, after its last OnMessage.
  virtual void OnCallEnded(const grpc_protocol::Status& status) = 0;
};

class GrpcConnection {
 public:
  struct Options {
    size_t max_message_bytes = kMaxBridgeMessageBytes;
    // Receive window of the connection and of each stream.
    int32_t receive_window_bytes = 16 << 20;
  };

  // Connects to the Unix socket at `socket_path` (retrying only a full backlog, up to
  // `timeout_ms`) and queues the HTTP/2 preface. Null with `*error` on failure.
  static std::unique_ptr<GrpcConnection> Connect(const std::string& socket_path, int timeout_ms,
                                                 std::string* error);
  static std::unique_ptr<GrpcConnection> Connect(const std::string& socket_path, int timeout_ms,
                                                 const Options& options, std::string* error);
  ~GrpcConnection();
  GrpcConnection(const GrpcConnection&) = delete;
  GrpcConnection& operator=(const GrpcConnection&) = delete;

  int fd() const { return fd_; }
  // The bridge closed or reset the connection (as opposed to breaking the protocol or
  // not answering in time): the process behind the socket is gone or going.
  bool peer_gone() const { return peer_gone_; }

  // A unary call: sends `request`, waits up to `timeout_ms` (also sent as grpc-timeout)
  // for the reply. DEADLINE_EXCEEDED when the wait ends (the call is then cancelled).
  grpc_protocol::Status CallUnary(const std::string& method_path, const std::string& request,
                                  int timeout_ms, std::string* reply);

  // Starts a streaming call; its messages and end go to `observer`. False with
  // `*error` when the connection is broken or a call is open.
  bool StartCall(const std::string& method_path, GrpcCallObserver* observer, std::string* error);
  // Queues a message made of `head` followed by `tail` (either may be empty), so a big
  // payload is queued as it is, not copied into a new buffer. Dropped once the call
  // ended or its sending side was closed.
  void SendMessage(std::string head, std::string tail = std::string());
  // Half-close: END_STREAM once everything queued has been sent.
  void CloseSend();
  // Resets the call (RST_STREAM CANCEL); the observer hears CANCELLED with `why`.
  void Cancel(const std::string& why);
  bool call_open() const { return observer_ != nullptr && !call_ended_; }
  // CloseSend() was called: nothing more reaches the bridge on this call.
  bool send_closed() const { return send_closed_; }
  // Message bytes queued and not yet taken by HTTP/2 (the bridge's window was full).
  size_t queued_send_bytes() const { return queued_bytes_; }

  // Events to poll fd() for.
  short poll_events() const;
  // Reads and writes what it can; reports to the observer.
  void OnPollEvents(short revents);
  // While held, received bytes are not given back to the bridge's send window.
  void HoldReceiveWindow(bool hold);

 private:
  struct Callbacks;

  GrpcConnection(int fd, const Options& options);
  bool Init(std::string* error);
  // `timeout_ms` < 0: no grpc-timeout header.
  bool StartCallWithTimeout(const std::string& method_path, GrpcCallObserver* observer,
                            int timeout_ms, std::string* error);
  void ReadAvailable();
  void Flush();
  void GiveBackWindow();
  // The connection is unusable: ends the call (if open) with UNAVAILABLE.
  void FailConnection(const std::string& why);
  void EndCall(grpc_protocol::Status status);
  void EndCallFromHeaders();
  void ResetStream(uint32_t error_code);

  const int fd_;
  const Options options_;
  nghttp2_session* session_ = nullptr;
  bool broken_ = false;
  std::string broken_reason_;
  bool in_callbacks_ = false;  // inside nghttp2_session_mem_recv
  bool peer_gone_ = false;
  std::string protocol_error_;  // nghttp2's last complaint about what the bridge sent

  // Allocated without being filled: only the pages reads write to become resident.
  std::unique_ptr<char[]> read_buffer_;
  std::string out_;  // serialized frames not yet written
  size_t out_at_ = 0;

  // The current call.
  GrpcCallObserver* observer_ = nullptr;
  int32_t stream_id_ = -1;
  bool call_ended_ = false;
  bool stream_closed_ = false;      // nghttp2 forgot the stream
  bool send_closed_ = false;        // CloseSend() was called
  bool data_deferred_ = false;      // the data source waits for SendMessage/CloseSend
  std::deque<std::string> send_queue_;
  size_t send_front_at_ = 0;
  size_t queued_bytes_ = 0;
  int http_status_ = 0;
  std::string content_type_;
  int grpc_status_ = -1;
  std::string grpc_message_;
  grpc_protocol::MessageAssembler assembler_;

  size_t unconsumed_bytes_ = 0;  // received, not yet given back
  bool hold_window_ = false;
};

}  // namespace abx
