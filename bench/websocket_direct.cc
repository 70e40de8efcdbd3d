#include "bench/websocket_direct.h"

#include <boost/asio/connect.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/websocket.hpp>
#include <chrono>
#include <deque>

#include <rapidjson/document.h>

#include "bench/direct_client.h"

namespace abx::bench {

namespace beast = boost::beast;
namespace net = boost::asio;
namespace websocket = beast::websocket;
using tcp = net::ip::tcp;

// One read is always pending (a cancelled WebSocket read leaves the stream unusable):
// frames gather in `frames` while the caller runs the loop.
struct DirectTerminal::Impl {
  net::io_context ioc;
  websocket::stream<tcp::socket> ws{ioc};
  beast::flat_buffer in;
  std::deque<std::string> frames;  // binary frames not looked at yet
  bool reading = false;
  bool closed = false;

  void Arm() {
    if (reading || closed) return;
    reading = true;
    ws.async_read(in, [this](beast::error_code ec, size_t) {
      reading = false;
      if (ec) {
        closed = true;
        return;
      }
      if (!ws.got_text()) frames.push_back(beast::buffers_to_string(in.data()));
      in.consume(in.size());
      Arm();
    });
  }
};

DirectTerminal::DirectTerminal() : impl_(std::make_unique<Impl>()) {}
DirectTerminal::~DirectTerminal() { Close(); }

bool DirectTerminal::Open(const std::string& execd_base, std::string* error) {
  DirectClient http;
  HttpResult made = http.Post(execd_base + "/pty", "{}", {"Content-Type: application/json"});
  rapidjson::Document doc;
  doc.Parse(made.body.c_str(), made.body.size());
  if (!made.ok || made.status != 201 || !doc.IsObject() || !doc.HasMember("session_id")) {
    *error = "POST /pty: HTTP " + std::to_string(made.status);
    return false;
  }
  const std::string id = doc["session_id"].GetString();
  // http://host:port[/prefix]
  const std::string rest = execd_base.substr(execd_base.find("://") + 3);
  const size_t slash = rest.find('/');
  const std::string authority = rest.substr(0, slash);
  const std::string prefix = slash == std::string::npos ? "" : rest.substr(slash);
  const size_t colon = authority.rfind(':');
  try {
    tcp::resolver resolver(impl_->ioc);
    net::connect(impl_->ws.next_layer(),
                 resolver.resolve(authority.substr(0, colon), authority.substr(colon + 1)));
    impl_->ws.handshake(authority, prefix + "/pty/" + id + "/ws");
    impl_->ws.binary(true);
  } catch (const std::exception& e) {
    *error = std::string("terminal WebSocket: ") + e.what();
    return false;
  }
  return true;
}

void DirectTerminal::Type(const std::string& bytes) {
  const std::string frame = std::string(1, '\0') + bytes;
  bool done = false;
  impl_->ws.binary(true);
  impl_->ws.async_write(net::buffer(frame), [&](beast::error_code, size_t) { done = true; });
  while (!done) {
    if (impl_->ioc.stopped()) impl_->ioc.restart();  // it ran out of work earlier
    impl_->ioc.run_one();
  }
}

long long DirectTerminal::ReadUntil(const std::string& needle, int timeout_ms, bool* found) {
  *found = false;
  long long bytes = 0;
  std::string tail;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  for (;;) {
    while (!impl_->frames.empty()) {
      const std::string frame = std::move(impl_->frames.front());
      impl_->frames.pop_front();
      if (frame.empty() || (frame[0] != 1 && frame[0] != 2)) continue;
      bytes += static_cast<long long>(frame.size() - 1);
      if (needle.empty()) {
        *found = true;
        return bytes;
      }
      tail.append(frame, 1, std::string::npos);
      if (tail.find(needle) != std::string::npos) {
        *found = true;
        return bytes;
      }
      if (tail.size() > 4096) tail.erase(0, tail.size() - 256);
    }
    impl_->Arm();
    if (impl_->closed || std::chrono::steady_clock::now() >= deadline) return bytes;
    if (impl_->ioc.stopped()) impl_->ioc.restart();
    impl_->ioc.run_one_until(deadline);
  }
}

void DirectTerminal::Close() {
  beast::error_code ignored;
  impl_->ws.next_layer().close(ignored);
}

}  // namespace abx::bench
