#include "epp-shim/grpc_connection.h"

#include <errno.h>
#include <poll.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <utility>

#include <nghttp2/nghttp2.h>

#include "common/percent_encoding.h"
#include "common/platform.h"

namespace abx {
namespace {

using grpc_protocol::Status;

// One read(2) from the bridge at most this much; a few reads per OnPollEvents, so a
// fast bridge cannot keep the loop from the host's stdin and stdout.
constexpr size_t kReadBufferBytes = 256 << 10;
constexpr int kMaxReadsPerEvent = 4;
// Frames are gathered up to this much before one write(2) to the socket.
constexpr size_t kWriteBatchBytes = 256 << 10;
// The largest DATA frame the bridge may send us: a 64 KiB exec.output message then
// usually arrives in one frame, and is handed over without being copied.
constexpr uint32_t kMaxFrameBytes = 1 << 20;

std::string_view View(const uint8_t* data, size_t size) {
  return std::string_view(reinterpret_cast<const char*>(data), size);
}

nghttp2_nv Header(std::string_view name, std::string_view value) {
  nghttp2_nv nv;
  nv.name = reinterpret_cast<uint8_t*>(const_cast<char*>(name.data()));
  nv.namelen = name.size();
  nv.value = reinterpret_cast<uint8_t*>(const_cast<char*>(value.data()));
  nv.valuelen = value.size();
  nv.flags = NGHTTP2_NV_FLAG_NONE;
  return nv;
}

std::string ResetText(uint32_t error_code) {
  return std::string(nghttp2_http2_strerror(error_code)) + " (HTTP/2 error " +
         std::to_string(error_code) + ")";
}

// Collects the reply of a unary call.
class UnaryObserver final : public GrpcCallObserver {
 public:
  explicit UnaryObserver(std::string* reply) : reply_(reply) {}
  void OnMessage(std::string_view payload) override {
    ++messages_;
    reply_->assign(payload.data(), payload.size());
  }
  void OnCallEnded(const Status& status) override {
    status_ = status;
    ended_ = true;
  }
  bool ended() const { return ended_; }
  Status Result() const {
    if (status_.ok() && messages_ != 1) {
      return Status{grpc_protocol::kInternal,
                    "a unary call answered with " + std::to_string(messages_) + " messages"};
    }
    return status_;
  }

 private:
  std::string* reply_;
  int messages_ = 0;
  bool ended_ = false;
  Status status_;
};

}  // namespace

// nghttp2's callbacks, with the connection as user data.
struct GrpcConnection::Callbacks {
  static GrpcConnection* Self(void* user_data) { return static_cast<GrpcConnection*>(user_data); }

  static int OnHeader(nghttp2_session*, const nghttp2_frame* frame, const uint8_t* name,
                      size_t name_size, const uint8_t* value, size_t value_size, uint8_t,
                      void* user_data) {
    GrpcConnection* self = Self(user_data);
    if (frame->hd.type != NGHTTP2_HEADERS || frame->hd.stream_id != self->stream_id_) return 0;
    const std::string_view key = View(name, name_size);
    const std::string_view text = View(value, value_size);
    if (key == ":status") {
      self->http_status_ = 0;
      for (char c : text) {
        self->http_status_ = c >= '0' && c <= '9' ? self->http_status_ * 10 + (c - '0') : -1000;
      }
    } else if (key == "content-type") {
      self->content_type_.assign(text);
    } else if (key == "grpc-status") {
      int code = text.empty() ? -1 : 0;
      for (char c : text) code = c >= '0' && c <= '9' && code < 1000 ? code * 10 + (c - '0') : -1;
      self->grpc_status_ = code < 0 ? grpc_protocol::kUnknown : code;
    } else if (key == "grpc-message") {
      // grpc-message is percent-encoded; a malformed escape is kept, as gRPC's decoder does.
      self->grpc_message_ = PercentDecodeLenient(text);
    }
    return 0;
  }

  static int OnFrameReceived(nghttp2_session*, const nghttp2_frame* frame, void* user_data) {
    GrpcConnection* self = Self(user_data);
    if (frame->hd.stream_id != self->stream_id_ || self->call_ended_) return 0;
    const bool end_stream = (frame->hd.flags & NGHTTP2_FLAG_END_STREAM) != 0;
    if (frame->hd.type == NGHTTP2_HEADERS) {
      if (end_stream) {
        self->EndCallFromHeaders();  // trailers, or a trailers-only response
      } else if (frame->headers.cat == NGHTTP2_HCAT_RESPONSE) {
        const bool grpc_type = self->content_type_.rfind("application/grpc", 0) == 0;
        if (self->http_status_ != 200 || !grpc_type) self->EndCallFromHeaders();
      }
    } else if (frame->hd.type == NGHTTP2_DATA && end_stream) {
      self->EndCall(Status{grpc_protocol::kInternal,
                           "the bridge ended the call without a status (no trailers)"});
    }
    return 0;
  }

  static int OnDataChunk(nghttp2_session*, uint8_t, int32_t stream_id, const uint8_t* data,
                         size_t size, void* user_data) {
    GrpcConnection* self = Self(user_data);
    self->unconsumed_bytes_ += size;
    if (stream_id != self->stream_id_ || self->call_ended_) return 0;
    Status error;
    const bool ok = self->assembler_.Feed(
        reinterpret_cast<const char*>(data), size,
        [self](std::string_view payload) {
          if (!self->call_ended_) self->observer_->OnMessage(payload);
        },
        &error);
    if (!ok) {
      self->ResetStream(NGHTTP2_CANCEL);
      self->EndCall(std::move(error));
    }
    return 0;
  }

  static int OnStreamClose(nghttp2_session*, int32_t stream_id, uint32_t error_code,
                           void* user_data) {
    GrpcConnection* self = Self(user_data);
    if (stream_id != self->stream_id_) return 0;
    self->stream_closed_ = true;
    if (self->call_ended_) return 0;
    if (error_code == NGHTTP2_REFUSED_STREAM) {
      self->EndCall(Status{grpc_protocol::kUnavailable,
                           "the bridge refused the call (it is shutting down)"});
    } else if (error_code == NGHTTP2_CANCEL) {
      self->EndCall(Status{grpc_protocol::kCancelled, "the bridge cancelled the call"});
    } else if (!self->protocol_error_.empty()) {
      self->EndCall(Status{grpc_protocol::kUnavailable,
                           "the bridge broke the HTTP/2 protocol: " + self->protocol_error_});
    } else if (error_code != NGHTTP2_NO_ERROR) {
      self->EndCall(Status{grpc_protocol::kUnavailable,
                           "the bridge reset the call: " + ResetText(error_code)});
    } else {
      self->EndCall(Status{grpc_protocol::kInternal,
                           "the bridge closed the call without a status"});
    }
    return 0;
  }

  // Why nghttp2 gave up on the connection or the stream (a frame it refused), in its
  // words; kept for the messages of what ends because of it.
  static int OnError(nghttp2_session*, int, const char* message, size_t size, void* user_data) {
    Self(user_data)->protocol_error_.assign(message, size);
    return 0;
  }

  static ssize_t ReadData(nghttp2_session*, int32_t stream_id, uint8_t* buffer, size_t length,
                          uint32_t* data_flags, nghttp2_data_source*, void* user_data) {
    GrpcConnection* self = Self(user_data);
    if (stream_id != self->stream_id_ || self->call_ended_) {
      *data_flags |= NGHTTP2_DATA_FLAG_EOF;
      return 0;
    }
    size_t copied = 0;
    while (copied < length && !self->send_queue_.empty()) {
      std::string& front = self->send_queue_.front();
      const size_t take = std::min(length - copied, front.size() - self->send_front_at_);
      memcpy(buffer + copied, front.data() + self->send_front_at_, take);
      copied += take;
      self->send_front_at_ += take;
      if (self->send_front_at_ == front.size()) {
        self->send_queue_.pop_front();
        self->send_front_at_ = 0;
      }
    }
    self->queued_bytes_ -= copied;
    if (self->send_queue_.empty() && self->send_closed_) {
      *data_flags |= NGHTTP2_DATA_FLAG_EOF;
    } else if (copied == 0) {
      self->data_deferred_ = true;
      return NGHTTP2_ERR_DEFERRED;
    }
    return static_cast<ssize_t>(copied);
  }

  // Lets DATA frames be as large as the peer allows (up to kMaxFrameBytes's worth of
  // queued bytes), instead of nghttp2's default of 16 KiB.
  static ssize_t DataLength(nghttp2_session*, uint8_t, int32_t, int32_t connection_window,
                            int32_t stream_window, uint32_t remote_max_frame_size, void*) {
    const int64_t length = std::min<int64_t>({connection_window, stream_window,
                                              static_cast<int64_t>(remote_max_frame_size),
                                              static_cast<int64_t>(kMaxFrameBytes)});
    return static_cast<ssize_t>(std::max<int64_t>(length, 1));
  }
};

std::unique_ptr<GrpcConnection> GrpcConnection::Connect(const std::string& socket_path,
                                                        int timeout_ms, std::string* error) {
  return Connect(socket_path, timeout_ms, Options(), error);
}

std::unique_ptr<GrpcConnection> GrpcConnection::Connect(const std::string& socket_path,
                                                        int timeout_ms, const Options& options,
                                                        std::string* error) {
  const int fd = ConnectUnixSocket(socket_path, timeout_ms, error);
  if (fd < 0) return nullptr;
  std::unique_ptr<GrpcConnection> connection(new GrpcConnection(fd, options));
  if (!connection->Init(error)) return nullptr;
  return connection;
}

GrpcConnection::GrpcConnection(int fd, const Options& options)
    : fd_(fd), options_(options), assembler_(options.max_message_bytes) {}

GrpcConnection::~GrpcConnection() {
  if (session_ != nullptr) nghttp2_session_del(session_);
  close(fd_);
}

bool GrpcConnection::Init(std::string* error) {
  nghttp2_session_callbacks* callbacks;
  if (nghttp2_session_callbacks_new(&callbacks) != 0) {
    *error = "nghttp2: out of memory";
    return false;
  }
  nghttp2_session_callbacks_set_on_header_callback(callbacks, Callbacks::OnHeader);
  nghttp2_session_callbacks_set_on_frame_recv_callback(callbacks, Callbacks::OnFrameReceived);
  nghttp2_session_callbacks_set_on_data_chunk_recv_callback(callbacks, Callbacks::OnDataChunk);
  nghttp2_session_callbacks_set_on_stream_close_callback(callbacks, Callbacks::OnStreamClose);
  nghttp2_session_callbacks_set_data_source_read_length_callback(callbacks,
                                                                 Callbacks::DataLength);
  nghttp2_session_callbacks_set_error_callback2(callbacks, Callbacks::OnError);
  nghttp2_option* option;
  if (nghttp2_option_new(&option) != 0) {
    nghttp2_session_callbacks_del(callbacks);
    *error = "nghttp2: out of memory";
    return false;
  }
  nghttp2_option_set_no_auto_window_update(option, 1);
  const int rc = nghttp2_session_client_new2(&session_, callbacks, this, option);
  nghttp2_option_del(option);
  nghttp2_session_callbacks_del(callbacks);
  if (rc != 0) {
    session_ = nullptr;
    *error = std::string("nghttp2: ") + nghttp2_strerror(rc);
    return false;
  }
  const nghttp2_settings_entry settings[] = {
      {NGHTTP2_SETTINGS_ENABLE_PUSH, 0},
      {NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE, static_cast<uint32_t>(options_.receive_window_bytes)},
      {NGHTTP2_SETTINGS_MAX_FRAME_SIZE, kMaxFrameBytes},
  };
  if (nghttp2_submit_settings(session_, NGHTTP2_FLAG_NONE, settings,
                              sizeof(settings) / sizeof(settings[0])) != 0 ||
      nghttp2_session_set_local_window_size(session_, NGHTTP2_FLAG_NONE, 0,
                                            options_.receive_window_bytes) != 0) {
    *error = "nghttp2: cannot queue the connection's settings";
    return false;
  }
  Flush();
  if (broken_) {
    *error = broken_reason_;
    return false;
  }
  return true;
}

bool GrpcConnection::StartCall(const std::string& method_path, GrpcCallObserver* observer,
                               std::string* error) {
  return StartCallWithTimeout(method_path, observer, -1, error);
}

bool GrpcConnection::StartCallWithTimeout(const std::string& method_path,
                                          GrpcCallObserver* observer, int timeout_ms,
                                          std::string* error) {
  if (broken_) {
    *error = broken_reason_;
    return false;
  }
  if (call_open()) {
    *error = "a call is already open on this connection";
    return false;
  }
  observer_ = observer;
  stream_id_ = -1;
  call_ended_ = false;
  stream_closed_ = false;
  send_closed_ = false;
  data_deferred_ = false;
  send_queue_.clear();
  send_front_at_ = 0;
  queued_bytes_ = 0;
  http_status_ = 0;
  content_type_.clear();
  grpc_status_ = -1;
  grpc_message_.clear();
  assembler_.Reset();

  const std::string timeout =
      timeout_ms >= 0 ? grpc_protocol::TimeoutHeader(timeout_ms) : std::string();
  std::vector<nghttp2_nv> headers = {
      Header(":method", "POST"),
      Header(":scheme", "http"),
      Header(":path", method_path),
      // What grpc++ sends for a unix: target.
      Header(":authority", "localhost"),
      Header("content-type", "application/grpc"),
      Header("te", "trailers"),
  };
  if (!timeout.empty()) headers.push_back(Header("grpc-timeout", timeout));
  nghttp2_data_provider provider;
  provider.source.ptr = nullptr;
  provider.read_callback = Callbacks::ReadData;
  const int32_t stream_id =
      nghttp2_submit_request(session_, nullptr, headers.data(), headers.size(), &provider, nullptr);
  if (stream_id < 0) {
    observer_ = nullptr;
    *error = std::string("HTTP/2: cannot start a call: ") + nghttp2_strerror(stream_id);
    return false;
  }
  stream_id_ = stream_id;
  Flush();  // a failure here ends the call through the observer
  return true;
}

grpc_protocol::Status GrpcConnection::CallUnary(const std::string& method_path,
                                                const std::string& request, int timeout_ms,
                                                std::string* reply) {
  UnaryObserver observer(reply);
  std::string error;
  if (!StartCallWithTimeout(method_path, &observer, timeout_ms, &error)) {
    return Status{grpc_protocol::kUnavailable, error};
  }
  SendMessage(request);
  CloseSend();
  const int64_t deadline = MonotonicMillis() + timeout_ms;
  while (!observer.ended()) {
    const int64_t remaining = deadline - MonotonicMillis();
    if (remaining <= 0) {
      Cancel("Deadline Exceeded");
      observer_ = nullptr;
      return Status{grpc_protocol::kDeadlineExceeded, "Deadline Exceeded"};
    }
    pollfd entry{fd_, poll_events(), 0};
    const int ready = poll(&entry, 1, static_cast<int>(remaining));
    if (ready < 0 && errno != EINTR) {
      FailConnection(std::string("poll: ") + strerror(errno));
    } else if (ready > 0) {
      OnPollEvents(entry.revents);
    }
  }
  observer_ = nullptr;
  return observer.Result();
}

short GrpcConnection::poll_events() const {
  return static_cast<short>(POLLIN | (out_at_ < out_.size() ? POLLOUT : 0));
}

void GrpcConnection::SendMessage(std::string head, std::string tail) {
  if (!call_open() || send_closed_) return;
  const size_t size = head.size() + tail.size();
  std::string prefix = grpc_protocol::MessagePrefix(size);
  queued_bytes_ += prefix.size() + size;
  if (head.size() + tail.size() <= 4096) {
    // Small messages travel as one piece.
    prefix += head;
    prefix += tail;
    send_queue_.push_back(std::move(prefix));
  } else {
    prefix += head;
    send_queue_.push_back(std::move(prefix));
    if (!tail.empty()) send_queue_.push_back(std::move(tail));
  }
  if (data_deferred_) {
    data_deferred_ = false;
    nghttp2_session_resume_data(session_, stream_id_);
  }
  Flush();
}

void GrpcConnection::CloseSend() {
  if (!call_open() || send_closed_) return;
  send_closed_ = true;
  if (data_deferred_) {
    data_deferred_ = false;
    nghttp2_session_resume_data(session_, stream_id_);
  }
  Flush();
}

void GrpcConnection::Cancel(const std::string& why) {
  if (!call_open()) return;
  ResetStream(NGHTTP2_CANCEL);
  EndCall(Status{grpc_protocol::kCancelled, why});
  Flush();
}

void GrpcConnection::HoldReceiveWindow(bool hold) {
  if (hold == hold_window_) return;
  hold_window_ = hold;
  if (!hold) {
    GiveBackWindow();
    Flush();
  }
}

void GrpcConnection::OnPollEvents(short revents) {
  if (broken_) return;
  if ((revents & (POLLIN | POLLHUP | POLLERR)) != 0) ReadAvailable();
  GiveBackWindow();
  Flush();
  if (!broken_ && nghttp2_session_want_read(session_) == 0 &&
      nghttp2_session_want_write(session_) == 0 && out_at_ == out_.size()) {
    FailConnection(protocol_error_.empty()
                       ? "the bridge ended the HTTP/2 connection"
                       : "the bridge broke the HTTP/2 protocol: " + protocol_error_);
  }
}

void GrpcConnection::ReadAvailable() {
  if (read_buffer_ == nullptr) read_buffer_.reset(new char[kReadBufferBytes]);
  for (int i = 0; i < kMaxReadsPerEvent && !broken_; ++i) {
    const ssize_t got = read(fd_, read_buffer_.get(), kReadBufferBytes);
    if (got < 0) {
      if (errno == EINTR) continue;
      if (errno == EAGAIN) return;
      peer_gone_ = errno == ECONNRESET;
      FailConnection(std::string("read from the bridge: ") + strerror(errno));
      return;
    }
    if (got == 0) {
      peer_gone_ = true;
      FailConnection("the bridge closed the connection");
      return;
    }
    // Callbacks run inside; Flush() waits for the end of it (nghttp2 may not be asked
    // to send from within its own callbacks).
    in_callbacks_ = true;
    const ssize_t used = nghttp2_session_mem_recv(
        session_, reinterpret_cast<const uint8_t*>(read_buffer_.get()), static_cast<size_t>(got));
    in_callbacks_ = false;
    if (used < 0) {
      FailConnection(std::string("the bridge broke the HTTP/2 protocol: ") +
                     nghttp2_strerror(static_cast<int>(used)));
      return;
    }
    if (static_cast<size_t>(got) < kReadBufferBytes) return;  // drained for now
  }
}

void GrpcConnection::GiveBackWindow() {
  if (hold_window_ || unconsumed_bytes_ == 0 || broken_) return;
  const bool stream_alive =
      stream_id_ > 0 && !stream_closed_ &&
      nghttp2_session_find_stream(session_, stream_id_) != nullptr;
  if (stream_alive) {
    nghttp2_session_consume(session_, stream_id_, unconsumed_bytes_);
  } else {
    nghttp2_session_consume_connection(session_, unconsumed_bytes_);
  }
  unconsumed_bytes_ = 0;
}

void GrpcConnection::Flush() {
  if (in_callbacks_) return;
  while (!broken_) {
    if (out_at_ == out_.size()) {
      out_.clear();
      out_at_ = 0;
      while (out_.size() < kWriteBatchBytes) {
        const uint8_t* data;
        const ssize_t size = nghttp2_session_mem_send(session_, &data);
        if (size < 0) {
          FailConnection(std::string("HTTP/2: ") + nghttp2_strerror(static_cast<int>(size)));
          return;
        }
        if (size == 0) break;
        out_.append(reinterpret_cast<const char*>(data), static_cast<size_t>(size));
      }
      if (out_.empty()) return;
    }
    const ssize_t wrote =
        send(fd_, out_.data() + out_at_, out_.size() - out_at_, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (wrote < 0) {
      if (errno == EINTR) continue;
      if (errno == EAGAIN) return;  // poll_events() now asks for POLLOUT
      peer_gone_ = errno == EPIPE || errno == ECONNRESET;
      FailConnection(std::string("write to the bridge: ") + strerror(errno));
      return;
    }
    out_at_ += static_cast<size_t>(wrote);
  }
}

void GrpcConnection::FailConnection(const std::string& why) {
  if (broken_) return;
  broken_ = true;
  broken_reason_ = why;
  out_.clear();
  out_at_ = 0;
  if (call_open()) EndCall(Status{grpc_protocol::kUnavailable, why});
}

void GrpcConnection::EndCall(Status status) {
  if (call_ended_) return;
  call_ended_ = true;
  send_queue_.clear();
  send_front_at_ = 0;
  queued_bytes_ = 0;
  observer_->OnCallEnded(status);
}

void GrpcConnection::EndCallFromHeaders() {
  if (grpc_status_ >= 0) {
    EndCall(Status{grpc_status_, grpc_message_});
  } else if (http_status_ != 200) {
    EndCall(Status{grpc_protocol::CodeForHttpStatus(http_status_),
                   "the bridge answered HTTP status " + std::to_string(http_status_)});
  } else if (content_type_.rfind("application/grpc", 0) != 0) {
    EndCall(Status{grpc_protocol::kUnknown,
                   "the bridge answered with content-type '" + content_type_ + "'"});
  } else {
    EndCall(Status{grpc_protocol::kInternal, "the bridge ended the call without a status"});
  }
  // Our side may still be open (the bridge answered before we half-closed).
  if (!stream_closed_) ResetStream(NGHTTP2_NO_ERROR);
}

void GrpcConnection::ResetStream(uint32_t error_code) {
  if (stream_id_ > 0 && !stream_closed_ && !broken_) {
    nghttp2_submit_rst_stream(session_, NGHTTP2_FLAG_NONE, stream_id_, error_code);
  }
}

}  // namespace abx
