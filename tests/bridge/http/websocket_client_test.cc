// The WebSocket client (bridge/http/websocket_client.h) against a real peer: the fake
// server's execd terminal endpoint.
#include "bridge/http/websocket_client.h"

#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <thread>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "bridge/opensandbox/pty_frames.h"
#include "tests/bridge/fake_sandbox.h"

namespace abx::http {
namespace {

// What a connection's handlers saw.
struct Ends {
  std::mutex mu;
  std::condition_variable cv;
  std::vector<WebSocketEnd> ends;

  WebSocket::Handlers Handlers() {
    WebSocket::Handlers handlers;
    handlers.on_message = [](bool, std::string) {};
    handlers.on_end = [this](const WebSocketEnd& end) {
      std::lock_guard<std::mutex> lock(mu);
      ends.push_back(end);
      cv.notify_all();
    };
    return handlers;
  }
  bool WaitEnded(std::chrono::milliseconds timeout) {
    std::unique_lock<std::mutex> lock(mu);
    return cv.wait_for(lock, timeout, [&] { return !ends.empty(); });
  }
};

class WebSocketClientTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string error;
    sandbox_ = bridge_test::FakeSandbox::Start(&error);
    ASSERT_NE(sandbox_, nullptr) << error;
  }

  // A terminal whose program never reads its input, so what is sent to it stays unread.
  WebSocketRequest TerminalNotReading(std::string* id = nullptr) {
    CancelToken never;
    auto pty_id = sandbox_->execd().CreatePty("", "sleep 600", &never);
    EXPECT_TRUE(pty_id.ok()) << pty_id.error().message;
    if (id && pty_id.ok()) *id = *pty_id;
    WebSocketRequest request;
    request.url = sandbox_->execd_url() + "/pty/" + (pty_id.ok() ? *pty_id : "") + "/ws?since=0";
    return request;
  }

  std::unique_ptr<bridge_test::FakeSandbox> sandbox_;
};

// An Abort while a message is being written: the message under way is in neither list
// (it may have arrived), those queued behind it come back in order, the end comes once,
// and the write's own completion afterwards touches nothing Abort let go.
TEST_F(WebSocketClientTest, AnAbortWhileAMessageIsWrittenGivesBackWhatWasNeverBegun) {
  WebSocketClient client;
  for (int round = 0; round < 8; ++round) {
    SCOPED_TRACE("round " + std::to_string(round));
    Ends ends;
    std::string pty_id;
    auto opened = client.Connect(TerminalNotReading(&pty_id), ends.Handlers(), nullptr);
    ASSERT_TRUE(opened.ok()) << opened.error().message;
    ASSERT_NE(opened->socket, nullptr) << opened->status << " " << opened->body;
    // The fake's execd stops reading its connection once the program's input is full
    // (after the first message), so the second cannot be written to the end: one of the
    // two is being written when the Abort comes.
    const std::string first = opensandbox::PtyStdinFrame(std::string(64 << 10, 'a'));
    const std::string second = opensandbox::PtyStdinFrame(std::string(16 << 20, 'b'));
    const std::string third = R"({"type":"resize","cols":90,"rows":30})";
    opened->socket->Send(false, first);
    opened->socket->Send(false, second);
    opened->socket->Send(true, third);
    opened->socket->Abort();
    ASSERT_TRUE(ends.WaitEnded(std::chrono::seconds(10)));
    std::this_thread::sleep_for(std::chrono::milliseconds(20));  // a second end would come now
    {
      std::lock_guard<std::mutex> lock(ends.mu);
      ASSERT_EQ(ends.ends.size(), 1u);
      const WebSocketEnd& end = ends.ends[0];
      EXPECT_EQ(end.error, "aborted");
      ASSERT_GE(end.unsent.size(), 1u);
      ASSERT_LE(end.unsent.size(), 2u) << "the message under way is not given back";
      if (end.unsent.size() == 2) {
        EXPECT_TRUE(end.unsent[0] == std::make_pair(false, second));
      }
      EXPECT_TRUE(end.unsent.back() == std::make_pair(true, third));
    }
    CancelToken never;
    sandbox_->execd().DeletePty(pty_id, &never);  // frees the fake's writer
  }
  EXPECT_EQ(client.open_connections(), 0u);
}

TEST_F(WebSocketClientTest, DestroyingTheClientEndsItsConnections) {
  Ends ends;
  {
    WebSocketClient client;
    auto opened = client.Connect(TerminalNotReading(), ends.Handlers(), nullptr);
    ASSERT_TRUE(opened.ok()) << opened.error().message;
    ASSERT_NE(opened->socket, nullptr);
    EXPECT_EQ(client.open_connections(), 1u);
    opened->socket->Send(false, opensandbox::PtyStdinFrame(std::string(64 << 10, 'b')));
  }
  std::lock_guard<std::mutex> lock(ends.mu);
  ASSERT_EQ(ends.ends.size(), 1u) << "its end came before the client was gone";
}

// A name under localhost is the loopback, as libcurl takes it for the HTTP calls to the
// same endpoint (an ingress gateway's wildcard names under localhost, say); the system
// resolver knows only "localhost" itself.
TEST_F(WebSocketClientTest, ANameUnderLocalhostIsTheLoopback) {
  Ends ends;
  WebSocketClient client;
  WebSocketRequest request = TerminalNotReading();
  const std::string loopback = "127.0.0.1";
  ASSERT_NE(request.url.find(loopback), std::string::npos) << request.url;
  request.url.replace(request.url.find(loopback), loopback.size(), "sandbox-44772.Gateway.LOCALHOST");
  auto opened = client.Connect(request, ends.Handlers(), nullptr);
  ASSERT_TRUE(opened.ok()) << opened.error().message;
  EXPECT_NE(opened->socket, nullptr);
}

}  // namespace
}  // namespace abx::http
