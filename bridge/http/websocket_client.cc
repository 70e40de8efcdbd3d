#include "bridge/http/websocket_client.h"

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/strand.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/websocket.hpp>
#include <cctype>
#include <condition_variable>
#include <deque>
#include <iterator>
#include <mutex>
#include <optional>
#include <set>
#include <thread>

#include "bridge/http/url.h"

namespace abx::http {
namespace {

namespace beast = boost::beast;
namespace net = boost::asio;
namespace websocket = beast::websocket;
using tcp = net::ip::tcp;

struct ParsedUrl {
  std::string host;
  std::string port = "80";
  std::string target = "/";
};

std::optional<ParsedUrl> ParseHttpUrl(const std::string& url) {
  constexpr std::string_view kScheme = "http://";
  if (url.compare(0, kScheme.size(), kScheme) != 0) return std::nullopt;
  ParsedUrl out;
  const size_t authority_end = url.find_first_of("/?", kScheme.size());
  std::string authority = url.substr(kScheme.size(), authority_end - kScheme.size());
  if (const size_t at = authority.rfind('@'); at != std::string::npos) authority = authority.substr(at + 1);
  const size_t colon = authority.rfind(':');
  if (colon != std::string::npos && authority.find(']', colon) == std::string::npos) {
    out.host = authority.substr(0, colon);
    out.port = authority.substr(colon + 1);
  } else {
    out.host = authority;
  }
  if (!out.host.empty() && out.host.front() == '[' && out.host.back() == ']') {
    out.host = out.host.substr(1, out.host.size() - 2);
  }
  if (authority_end != std::string::npos) {
    out.target = url.substr(authority_end);
    if (out.target[0] == '?') out.target = "/" + out.target;
  }
  if (out.host.empty() || out.port.empty()) return std::nullopt;
  return out;
}

}  // namespace

struct WebSocketClient::Impl {
  net::io_context ioc{1};
  std::optional<net::executor_work_guard<net::io_context::executor_type>> guard;
  std::thread thread;
  mutable std::mutex mu;
  std::set<WebSocket*> live;  // under mu

  void EnsureThread() {
    std::lock_guard<std::mutex> lock(mu);
    if (thread.joinable()) return;
    guard.emplace(ioc.get_executor());
    thread = std::thread([this] { ioc.run(); });
  }
};

namespace {

// One connection. Every member is touched on the I/O thread only.
class Connection final : public WebSocket, public std::enable_shared_from_this<Connection> {
 public:
  Connection(net::io_context& ioc, WebSocketClient::Impl* owner, Handlers handlers)
      : ws_(net::make_strand(ioc)), resolver_(ws_.get_executor()), owner_(owner), handlers_(std::move(handlers)) {}

  websocket::stream<beast::tcp_stream>& ws() { return ws_; }
  tcp::resolver& resolver() { return resolver_; }

  // From any thread, while Connect waits: gives up on the connection, which then never
  // calls its handlers.
  void GiveUp() {
    net::post(ws_.get_executor(), [self = shared_from_this()] {
      self->ended_ = true;
      self->handlers_ = Handlers();
      beast::error_code ignored;
      self->resolver_.cancel();
      beast::get_lowest_layer(self->ws_).socket().close(ignored);
    });
  }

  // On the I/O thread, once the handshake succeeded; false when it was given up.
  bool Start() {
    if (ended_) return false;
    beast::get_lowest_layer(ws_).expires_never();
    websocket::stream_base::timeout timeouts{};
    timeouts.handshake_timeout = std::chrono::seconds(30);
    timeouts.idle_timeout = std::chrono::seconds(60);
    timeouts.keep_alive_pings = true;
    ws_.set_option(timeouts);
    {
      std::lock_guard<std::mutex> lock(owner_->mu);
      owner_->live.insert(this);
    }
    Read();
    return true;
  }

  void Send(bool text, std::string payload) override {
    net::post(ws_.get_executor(), [self = shared_from_this(), text, payload = std::move(payload)]() mutable {
      if (self->ended_) return;
      self->out_.emplace_back(text, std::move(payload));
      if (!self->writing_) self->WriteNext();
    });
  }
  void Close() override {
    net::post(ws_.get_executor(), [self = shared_from_this()] {
      self->close_requested_ = true;
      if (!self->writing_) self->WriteNext();
    });
  }
  void Abort() override {
    net::post(ws_.get_executor(), [self = shared_from_this()] { self->Finish(beast::error_code(), "aborted"); });
  }

 private:
  void Read() {
    ws_.async_read(in_, [self = shared_from_this()](beast::error_code ec, size_t) {
      if (ec) return self->Finish(ec, "");
      const bool text = self->ws_.got_text();
      std::string payload = beast::buffers_to_string(self->in_.data());
      self->in_.consume(self->in_.size());
      if (self->handlers_.on_message) self->handlers_.on_message(text, std::move(payload));
      if (!self->ended_) self->Read();
    });
  }

  void WriteNext() {
    if (ended_) return;
    if (out_.empty()) {
      writing_ = false;
      if (close_requested_ && !closing_) {
        closing_ = true;
        ws_.async_close(websocket::close_code::normal, [self = shared_from_this()](beast::error_code ec) {
          self->Finish(ec ? ec : beast::error_code(websocket::error::closed), "");
        });
      }
      return;
    }
    writing_ = true;
    // Out of the queue while it is written, and kept until the write completes: the write
    // reads it until then, even after an Abort (Finish) has let the queue go.
    in_flight_ = std::move(out_.front());
    out_.pop_front();
    ws_.text(in_flight_.first);
    ws_.async_write(net::buffer(in_flight_.second), [self = shared_from_this()](beast::error_code ec, size_t) {
      if (self->ended_) return;  // aborted meanwhile: Finish has said what was not sent
      if (ec) {
        self->writing_ = false;  // what is left was never begun
        return self->Finish(ec, "");
      }
      if (self->handlers_.on_sent) self->handlers_.on_sent();
      self->WriteNext();
    });
  }

  void Finish(beast::error_code ec, const char* why) {
    if (ended_) return;
    ended_ = true;
    WebSocketEnd end;
    end.close_code = ws_.reason().code;
    end.close_reason = std::string(ws_.reason().reason.c_str());
    if (ec != websocket::error::closed || end.close_code == 0) {
      end.error = *why ? why : ec ? ec.message() : "the connection ended";
    }
    // The message being written is in neither list: it may or may not have arrived.
    end.unsent.assign(std::make_move_iterator(out_.begin()), std::make_move_iterator(out_.end()));
    out_.clear();
    beast::error_code ignored;
    beast::get_lowest_layer(ws_).socket().close(ignored);
    {
      std::lock_guard<std::mutex> lock(owner_->mu);
      owner_->live.erase(this);
    }
    Handlers handlers = std::move(handlers_);
    handlers_ = Handlers();
    if (handlers.on_end) handlers.on_end(end);
  }

  websocket::stream<beast::tcp_stream> ws_;
  tcp::resolver resolver_;
  WebSocketClient::Impl* owner_;
  Handlers handlers_;
  beast::flat_buffer in_;
  std::deque<std::pair<bool, std::string>> out_;
  std::pair<bool, std::string> in_flight_;  // while writing_
  bool writing_ = false;
  bool close_requested_ = false;
  bool closing_ = false;
  bool ended_ = false;
};

}  // namespace

WebSocketClient::WebSocketClient() : impl_(std::make_unique<Impl>()) {}

WebSocketClient::~WebSocketClient() {
  {
    std::lock_guard<std::mutex> lock(impl_->mu);
    for (WebSocket* socket : impl_->live) socket->Abort();
    impl_->guard.reset();
  }
  if (impl_->thread.joinable()) impl_->thread.join();
}

size_t WebSocketClient::open_connections() const {
  std::lock_guard<std::mutex> lock(impl_->mu);
  return impl_->live.size();
}

namespace {

// The name to look up for `host`. "localhost" and every name under it are the loopback
// (RFC 6761 §6.3), as libcurl resolves them without asking the system resolver, which
// knows only "localhost" itself: a WebSocket must reach whatever the HTTP calls to the
// same endpoint reach (a gateway's wildcard names under localhost, say).
std::string NameToResolve(const std::string& host) {
  std::string lower = host;
  for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  const std::string suffix = ".localhost";
  const bool under = lower.size() > suffix.size() && lower.compare(lower.size() - suffix.size(), suffix.size(), suffix) == 0;
  return under ? "localhost" : host;
}

}  // namespace

TransportResult<WebSocketOpened> WebSocketClient::Connect(const WebSocketRequest& request,
                                                          WebSocket::Handlers handlers, const CancelFlag* cancel) {
  auto parsed = ParseHttpUrl(request.url);
  if (!parsed) {
    return TransportError{TransportErrorKind::kOther, "WebSocket " + UrlForMessages(request.url) + ": not an http:// URL", 0};
  }
  impl_->EnsureThread();
  auto connection = std::make_shared<Connection>(impl_->ioc, impl_.get(), std::move(handlers));

  struct Wait {
    std::mutex mu;
    std::condition_variable cv;
    bool done = false;
    beast::error_code ec;
    const char* stage = "connect";
    websocket::response_type answer;
  };
  auto wait = std::make_shared<Wait>();
  auto finish = [wait](beast::error_code ec) {
    std::lock_guard<std::mutex> lock(wait->mu);
    wait->ec = ec;
    wait->done = true;
    wait->cv.notify_all();
  };
  const auto timeout = std::chrono::milliseconds(request.timeout_ms);
  net::post(connection->ws().get_executor(), [connection, wait, finish, parsed = *parsed, request, timeout] {
    connection->resolver().async_resolve(
        NameToResolve(parsed.host), parsed.port,
        [connection, wait, finish, parsed, request, timeout](beast::error_code ec, tcp::resolver::results_type results) {
          if (ec) return finish(ec);
          beast::get_lowest_layer(connection->ws()).expires_after(timeout);
          beast::get_lowest_layer(connection->ws()).async_connect(
              results, [connection, wait, finish, parsed, request](beast::error_code ec, const tcp::endpoint&) {
                if (ec) return finish(ec);
                wait->stage = "handshake";
                auto headers = request.headers;
                connection->ws().set_option(websocket::stream_base::decorator([headers](websocket::request_type& r) {
                  for (const auto& [name, value] : headers) r.set(name, value);
                }));
                // The asynchronous handshake keeps a declined answer (Boost 1.74's blocking
                // one does not).
                connection->ws().async_handshake(wait->answer, parsed.host + ":" + parsed.port, parsed.target,
                                                 [connection, finish](beast::error_code ec) {
                                                   if (!ec && !connection->Start()) ec = net::error::operation_aborted;
                                                   finish(ec);
                                                 });
              });
        });
  });

  bool cancelled = false;
  {
    CancelFlag::Watch watch(cancel, [wait] {
      std::lock_guard<std::mutex> lock(wait->mu);
      wait->cv.notify_all();
    });
    std::unique_lock<std::mutex> lock(wait->mu);
    const auto deadline = std::chrono::steady_clock::now() + timeout + std::chrono::seconds(1);
    wait->cv.wait_until(lock, deadline, [&] { return wait->done || (cancel && cancel->is_set()); });
    if (!wait->done) {
      cancelled = cancel && cancel->is_set();
      lock.unlock();
      connection->GiveUp();
      lock.lock();
      wait->cv.wait(lock, [&] { return wait->done; });
    }
  }
  const std::string where = "WebSocket " + UrlForMessages(request.url);
  if (cancelled) return TransportError{TransportErrorKind::kCancelled, where + ": cancelled", 0};
  if (wait->ec == net::error::operation_aborted) {
    return TransportError{TransportErrorKind::kTimeout, where + ": no connection within the timeout", 0};
  }
  if (wait->ec == websocket::error::upgrade_declined) {
    WebSocketOpened declined;
    declined.status = static_cast<int>(wait->answer.result_int());
    declined.body = wait->answer.body();
    return declined;
  }
  if (wait->ec) {
    const bool timed_out = wait->ec == beast::error::timeout;
    const bool refused = std::string(wait->stage) == "connect";
    return TransportError{timed_out ? TransportErrorKind::kTimeout
                          : refused ? TransportErrorKind::kUnreachable
                                    : TransportErrorKind::kBrokenStream,
                          where + ": " + wait->stage + ": " + wait->ec.message(), 0};
  }
  WebSocketOpened opened;
  opened.socket = connection;
  return opened;
}

}  // namespace abx::http
