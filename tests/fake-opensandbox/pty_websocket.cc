#include "tests/fake-opensandbox/pty_websocket.h"

#include <sys/socket.h>
#include <unistd.h>

#include <signal.h>

#include <atomic>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/websocket.hpp>
#include <deque>
#include <string>

#include "rapidjson/document.h"
#include "tests/fake-opensandbox/go_json.h"

namespace fake_opensandbox {
namespace {

namespace beast = boost::beast;
namespace http = beast::http;
namespace net = boost::asio;
namespace websocket = beast::websocket;
using tcp = net::ip::tcp;

// gorilla's WriteJSON ends every text frame with a newline.
std::string ErrorFrame(const std::string& text, const char* code) {
  GoJsonWriter w;
  w.StartObject();
  w.Key("type").String("error");
  w.Key("error").String(text);
  w.Key("code").String(code);
  w.EndObject();
  return w.Take() + "\n";
}

int SignalNumber(const std::string& name) {
  if (name == "SIGINT") return SIGINT;
  if (name == "SIGTERM") return SIGTERM;
  if (name == "SIGKILL") return SIGKILL;
  if (name == "SIGQUIT") return SIGQUIT;
  if (name == "SIGHUP") return SIGHUP;
  return 0;  // execd ignores other names
}

// One terminal connection. Everything on the socket happens on the io_context's one
// thread (the connection's own); the session's output pump reaches it through posts.
class TerminalSocket final : public PtyClient, public std::enable_shared_from_this<TerminalSocket> {
 public:
  TerminalSocket(std::shared_ptr<net::io_context> ioc, tcp::socket socket, std::shared_ptr<PtySession> session,
                 PtyStart start, PtySocketOptions options)
      : ioc_(std::move(ioc)),
        ws_(std::move(socket)),
        stall_(ws_.get_executor()),
        session_(std::move(session)),
        start_(std::move(start)),
        options_(options) {}

  void Run(http::request<http::string_body> request) {
    ws_.set_option(websocket::stream_base::timeout{std::chrono::seconds(30), std::chrono::seconds(60), true});
    ws_.async_accept(request, [self = shared_from_this()](beast::error_code ec) { self->OnAccepted(ec); });
  }

  // PtyClient: from the pump's thread, with the session's lock held.
  void QueueOutput(uint8_t kind, std::string bytes) override {
    const size_t size = bytes.size();
    queued_ += size;
    std::string frame(1, static_cast<char>(kind));
    frame += bytes;
    net::post(ws_.get_executor(), [self = shared_from_this(), frame = std::move(frame), size]() mutable {
      self->Enqueue(true, std::move(frame), size);
    });
  }
  void QueueExit(int exit_code) override {
    net::post(ws_.get_executor(), [self = shared_from_this(), exit_code] {
      GoJsonWriter w;
      w.StartObject();
      w.Key("type").String("exit");
      w.Key("exit_code").Int(exit_code);
      w.EndObject();
      self->detached_ = true;
      self->Enqueue(false, w.Take() + "\n", 0);
      self->CloseAfterWrites(websocket::close_code::normal, "process exited");
    });
  }
  void QueueEvict() override {
    net::post(ws_.get_executor(), [self = shared_from_this()] {
      self->detached_ = true;
      // Best effort, as execd: what is still queued is dropped.
      while (self->out_.size() > (self->writing_ ? 1u : 0u)) self->out_.pop_back();
      self->CloseAfterWrites(4001, "TAKEN_OVER");
    });
  }
  size_t QueuedBytes() const override { return queued_.load(); }

  void Finish(int64_t stale_hold_ms = 0) {
    if (!detached_) session_->Detach(this, stale_hold_ms);
    detached_ = true;
    // httplib still has the connection's other descriptor: shut the socket itself down,
    // so the client sees the end now, and stop the loop (its timers would keep it).
    beast::error_code ignored;
    beast::get_lowest_layer(ws_).shutdown(tcp::socket::shutdown_both, ignored);
    beast::get_lowest_layer(ws_).close(ignored);
    ioc_->stop();
  }

 private:
  struct Frame {
    bool binary;
    std::string data;
    size_t counted;  // output bytes it carries, for QueuedBytes
  };

  void OnAccepted(beast::error_code ec) {
    if (ec) return Finish();
    PtySession::Attached attached =
        session_->Attach(shared_from_this(), options_.takeover, options_.pipe_mode, options_.since, start_);
    if (!attached.ok) {
      // After the upgrade there is no status left to answer with: an error frame, then
      // the connection closed without a close frame.
      detached_ = true;
      const bool taken = attached.error.find("already connected") != std::string::npos;
      Enqueue(false, ErrorFrame(attached.error, taken ? "ALREADY_CONNECTED" : "START_FAILED"), 0);
      drop_after_writes_ = true;
      return;
    }
    if (!attached.replay.empty()) {
      std::string frame(9, '\0');
      frame[0] = 0x03;
      for (int i = 0; i < 8; ++i) frame[1 + i] = static_cast<char>((attached.replay_offset >> (56 - 8 * i)) & 0xff);
      frame += attached.replay;
      Enqueue(true, std::move(frame), 0);
    }
    GoJsonWriter w;
    w.StartObject();
    w.Key("type").String("connected");
    w.Key("session_id").String(session_->id());
    w.Key("mode").String(attached.pipe_mode ? "pipe" : "pty");
    w.EndObject();
    Enqueue(false, w.Take() + "\n", 0);
    if (options_.stall_reads_ms > 0) {  // the pty_stall_reads_ms fault
      stall_.expires_after(std::chrono::milliseconds(options_.stall_reads_ms));
      stall_.async_wait([self = shared_from_this()](beast::error_code ec) {
        if (!ec) self->Read();
      });
      return;
    }
    Read();
  }

  void Read() {
    ws_.async_read(in_, [self = shared_from_this()](beast::error_code ec, size_t) {
      if (ec) return self->Finish();
      self->OnFrame();
      self->in_.consume(self->in_.size());
      self->Read();
    });
  }

  void OnFrame() {
    std::string data = beast::buffers_to_string(in_.data());
    if (!ws_.got_text()) {
      if (data.empty() || data[0] != 0x00) return;  // other binary frames are ignored
      if (!session_->WriteStdin(data.substr(1))) StdinFailed();
      return;
    }
    rapidjson::Document doc;
    doc.Parse(data.c_str(), data.size());
    if (doc.HasParseError() || !doc.IsObject()) return;  // not JSON: ignored
    auto text = [&](const char* key) {
      auto it = doc.FindMember(key);
      return it != doc.MemberEnd() && it->value.IsString() ? std::string(it->value.GetString()) : std::string();
    };
    auto number = [&](const char* key) {
      auto it = doc.FindMember(key);
      return it != doc.MemberEnd() && it->value.IsInt() ? it->value.GetInt() : 0;
    };
    const std::string type = text("type");
    if (type == "stdin") {
      if (!session_->WriteStdin(text("data"))) StdinFailed();
    } else if (type == "resize") {
      session_->Resize(number("cols"), number("rows"));
    } else if (type == "signal") {
      if (int sig = SignalNumber(text("signal"))) session_->Signal(sig);
    } else if (type == "ping") {
      Enqueue(false, "{\"type\":\"pong\"}\n", 0);
    } else {
      Enqueue(false, ErrorFrame("unknown frame type \"" + type + "\"", "INVALID_FRAME"), 0);
    }
  }

  void StdinFailed() {
    Enqueue(false, ErrorFrame("failed to write to the process's stdin", "STDIN_WRITE_FAILED"), 0);
    drop_after_writes_ = true;
  }

  void Enqueue(bool binary, std::string data, size_t counted) {
    if (closing_) {
      queued_ -= counted;
      return;
    }
    out_.push_back(Frame{binary, std::move(data), counted});
    if (!writing_) WriteNext();
  }

  void CloseAfterWrites(uint16_t code, const char* reason) {
    close_reason_ = websocket::close_reason(static_cast<websocket::close_code>(code), reason);
    close_after_writes_ = true;
    if (!writing_) WriteNext();
  }

  void WriteNext() {
    if (out_.empty()) {
      writing_ = false;
      if (drop_after_writes_) return Finish();
      if (close_after_writes_ && !closing_) {
        closing_ = true;
        ws_.async_close(close_reason_, [self = shared_from_this()](beast::error_code) { self->Finish(); });
      }
      return;
    }
    writing_ = true;
    ws_.binary(out_.front().binary);
    ws_.async_write(net::buffer(out_.front().data), [self = shared_from_this()](beast::error_code ec, size_t) {
      const size_t counted = self->out_.front().counted;
      self->queued_ -= counted;
      self->out_.pop_front();
      self->sent_ += counted;
      const uint64_t limit = self->options_.drop_after_bytes;
      if (ec || (limit > 0 && self->sent_ >= limit)) {  // the drop_after fault: gone, no close frame
        self->writing_ = false;
        return self->Finish(ec ? 0 : self->options_.stale_hold_ms);
      }
      self->WriteNext();
    });
  }

  // Shared with the connection's thread: the session's output pump may hold this client
  // a moment longer than the loop runs, and the socket must go before its context.
  std::shared_ptr<net::io_context> ioc_;
  websocket::stream<tcp::socket> ws_;
  net::steady_timer stall_;
  std::shared_ptr<PtySession> session_;
  const PtyStart start_;
  const PtySocketOptions options_;
  beast::flat_buffer in_;
  std::deque<Frame> out_;
  std::atomic<size_t> queued_{0};
  uint64_t sent_ = 0;  // output bytes written
  bool writing_ = false;
  bool close_after_writes_ = false;
  bool drop_after_writes_ = false;
  bool closing_ = false;
  bool detached_ = false;  // the session no longer knows this client
  websocket::close_reason close_reason_;
};

}  // namespace

void ServePtyWebSocket(int socket_fd, const httplib::Request& req, std::shared_ptr<PtySession> session,
                       const PtyStart& start, const PtySocketOptions& options) {
  const int fd = dup(socket_fd);
  if (fd < 0) return;
  auto ioc = std::make_shared<net::io_context>(1);
  tcp::socket socket(*ioc);
  beast::error_code ec;
  socket.assign(req.local_addr.find(':') != std::string::npos ? tcp::v6() : tcp::v4(), fd, ec);
  if (ec) {
    close(fd);
    return;
  }
  http::request<http::string_body> upgrade{http::verb::get, req.target, 11};
  for (const auto& [name, value] : req.headers) upgrade.insert(name, value);
  auto terminal = std::make_shared<TerminalSocket>(ioc, std::move(socket), session, start, options);
  terminal->Run(std::move(upgrade));
  ioc->run();
  // No post may reach a stopped io_context: the session lets go of this client first.
  session->Detach(terminal.get());
  // Handlers still queued hold the connection, which holds the context: a cycle that
  // would never be freed. Run them out: on the closed socket each ends at once.
  for (int round = 0; round < 1000; ++round) {
    ioc->restart();
    if (ioc->poll() == 0) break;
  }
  shutdown(socket_fd, SHUT_RDWR);
}

}  // namespace fake_opensandbox
