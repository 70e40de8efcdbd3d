// The fake's terminals (/pty routes and their WebSocket) against docs/opensandbox.md
// §2.16: the REST answers, the frames and their order, typed input echoed by a real
// pseudo-terminal, resize, Ctrl-C, exit and a new shell for the next connection, pipe
// mode, the replay buffer and `since`, 409 for a second client and takeover with 4001.

#include <unistd.h>

#include <boost/asio/connect.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/websocket.hpp>
#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <thread>

#include <gtest/gtest.h>

#include "tests/fake-opensandbox/test_support.h"

namespace fake_opensandbox {
namespace {

namespace beast = boost::beast;
namespace net = boost::asio;
namespace websocket = beast::websocket;
using tcp = net::ip::tcp;
using std::chrono::milliseconds;

// A WebSocket client for one terminal connection; every wait is bounded.
class Terminal {
 public:
  struct Frame {
    bool text = false;
    std::string data;
  };

  // The handshake; false with the declined answer's status in *status.
  bool Connect(const std::string& host, int port, const std::string& target, int* status = nullptr) {
    tcp::resolver resolver(ioc_);
    net::connect(ws_.next_layer(), resolver.resolve(host, std::to_string(port)));
    // Asynchronous: Boost 1.74's blocking handshake leaves a declined answer unread.
    websocket::response_type answer;
    beast::error_code ec;
    ws_.async_handshake(answer, host + ":" + std::to_string(port), target, [&](beast::error_code e) { ec = e; });
    ioc_.run_for(milliseconds(10000));
    if (status) *status = static_cast<int>(answer.result_int());
    declined_body_ = answer.body() + " [" + ec.message() + "]";
    return !ec;
  }
  const std::string& declined_body() const { return declined_body_; }

  bool Send(bool text, const std::string& data) {
    ws_.text(text);
    beast::error_code ec;
    ws_.write(net::buffer(data), ec);
    return !ec;
  }
  bool Input(const std::string& bytes) { return Send(false, std::string(1, '\0') + bytes); }

  // The next frame; nullopt on timeout or when the connection ended (closed() tells).
  std::optional<Frame> Read(milliseconds timeout = milliseconds(10000)) {
    bool done = false;
    beast::error_code ec;
    in_.consume(in_.size());
    ws_.async_read(in_, [&](beast::error_code e, size_t) {
      done = true;
      ec = e;
    });
    ioc_.restart();
    ioc_.run_for(timeout);
    if (!done) {
      ws_.next_layer().cancel();
      ioc_.restart();
      ioc_.run();
      return std::nullopt;
    }
    if (ec) {
      closed_ = true;
      close_code_ = ws_.reason().code;
      close_reason_ = std::string(ws_.reason().reason.c_str());
      return std::nullopt;
    }
    return Frame{ws_.got_text(), beast::buffers_to_string(in_.data())};
  }
  // Output bytes (0x01/0x02 payloads) gathered until `needle` shows in them.
  bool OutputUntil(const std::string& needle, std::string* output, milliseconds timeout = milliseconds(10000)) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    while (output->find(needle) == std::string::npos) {
      const auto left = std::chrono::duration_cast<milliseconds>(deadline - std::chrono::steady_clock::now());
      if (left.count() <= 0) return false;
      auto frame = Read(left);
      if (!frame) return false;
      if (!frame->text && !frame->data.empty() && (frame->data[0] == 1 || frame->data[0] == 2)) {
        output->append(frame->data, 1, std::string::npos);
      } else {
        texts.push_back(frame->data);
      }
    }
    return true;
  }

  bool closed() const { return closed_; }
  int close_code() const { return close_code_; }
  const std::string& close_reason() const { return close_reason_; }
  std::vector<std::string> texts;  // text frames OutputUntil passed over

 private:
  net::io_context ioc_;
  websocket::stream<tcp::socket> ws_{ioc_};
  beast::flat_buffer in_;
  std::string declined_body_;
  bool closed_ = false;
  int close_code_ = 0;
  std::string close_reason_;
};

class PtyTest : public ::testing::Test {
 protected:
  void SetUp() override {
    execd_ = std::make_unique<EndpointClient>(fake_.ExecdEndpoint(fake_.CreateSandbox()));
  }
  std::string NewPty(const std::string& body = "") {
    auto res = execd_->client->Post(execd_->Path("/pty").c_str(), body, "application/json");
    EXPECT_EQ(res->status, 201) << res->body;
    return ParseJson(res->body)["session_id"].GetString();
  }
  std::unique_ptr<Terminal> Attach(const std::string& id, const std::string& query = "", int* status = nullptr) {
    auto terminal = std::make_unique<Terminal>();
    const std::string target = execd_->Path("/pty/" + id + "/ws") + (query.empty() ? "" : "?" + query);
    if (!terminal->Connect(execd_->host, execd_->port, target, status)) {
      declined_ = terminal->declined_body();
      return nullptr;
    }
    return terminal;
  }
  rapidjson::Document Status(const std::string& id) {
    auto res = execd_->client->Get(execd_->Path("/pty/" + id).c_str());
    EXPECT_EQ(res->status, 200) << res->body;
    return ParseJson(res->body);
  }

  TestFake fake_;
  std::unique_ptr<EndpointClient> execd_;
  std::string declined_;  // the body of the last declined handshake
};

TEST_F(PtyTest, RestRoutesAnswerAsExecd) {
  const std::string id = NewPty();
  auto status = Status(id);
  EXPECT_EQ(std::string(status["session_id"].GetString()), id);
  EXPECT_FALSE(status["running"].GetBool());  // nothing runs before the first WebSocket
  EXPECT_EQ(status["output_offset"].GetUint64(), 0u);
  auto res = execd_->client->Post(execd_->Path("/pty").c_str(), "{nope", "application/json");
  EXPECT_EQ(res->status, 400);
  EXPECT_NE(res->body.find("INVALID_REQUEST_BODY"), std::string::npos) << res->body;
  res = execd_->client->Get(execd_->Path("/pty/" + id + "/ws").c_str());  // no upgrade
  EXPECT_EQ(res->status, 400) << res->body;
  res = execd_->client->Delete(execd_->Path("/pty/" + id).c_str());
  EXPECT_EQ(res->status, 200);
  res = execd_->client->Get(execd_->Path("/pty/" + id).c_str());
  EXPECT_EQ(res->status, 404);
  EXPECT_EQ(res->body, R"({"code":"CONTEXT_NOT_FOUND","message":"pty session )" + id + R"( not found"})");
}

TEST_F(PtyTest, ATerminalEchoesResizesStopsAForegroundJobAndExits) {
  const std::string id = NewPty();
  auto terminal = Attach(id);
  ASSERT_NE(terminal, nullptr);
  auto connected = terminal->Read();
  ASSERT_TRUE(connected && connected->text);
  EXPECT_EQ(connected->data, R"({"type":"connected","session_id":")" + id + R"(","mode":"pty"})" "\n");

  std::string output;
  ASSERT_TRUE(terminal->Input("echo hi-$((6*7))\n"));
  ASSERT_TRUE(terminal->OutputUntil("hi-42\r\n", &output)) << output;
  EXPECT_NE(output.find("echo hi-$((6*7))"), std::string::npos) << "the terminal echoes typed input: " << output;

  ASSERT_TRUE(terminal->Send(true, R"({"type":"resize","cols":100,"rows":30})"));
  ASSERT_TRUE(terminal->Input("stty size\n"));
  ASSERT_TRUE(terminal->OutputUntil("30 100", &output)) << output;

  // Ctrl-C is a byte to the terminal, which sends SIGINT to the foreground job. As in a
  // Docker sandbox, whose execd runs in the background of a non-interactive sh, the shell
  // starts with SIGINT ignored and its jobs inherit that: the job goes on. (Matched on
  // what the commands print, never on the terminal's echo of what was typed.)
  const std::string ignoring = "sleep 1." + std::to_string(::getpid()) + "2";
  ASSERT_TRUE(terminal->Input(ignoring + "\n"));
  for (int i = 0; i < 100 && !ProcessRunning(ignoring); ++i) std::this_thread::sleep_for(milliseconds(20));
  ASSERT_TRUE(ProcessRunning(ignoring));
  ASSERT_TRUE(terminal->Input("\x03"));
  std::this_thread::sleep_for(milliseconds(300));
  EXPECT_TRUE(ProcessRunning(ignoring)) << "^C stopped a job started with SIGINT ignored";
  for (int i = 0; i < 150 && ProcessRunning(ignoring); ++i) std::this_thread::sleep_for(milliseconds(20));
  ASSERT_FALSE(ProcessRunning(ignoring));
  std::this_thread::sleep_for(milliseconds(200));  // bash back at its prompt
  // A job started with SIGINT at its default stops. The terminal drops what was typed
  // ahead of a ^C, so each step waits for the last.
  const std::string sleeper = "sleep 100." + std::to_string(::getpid()) + "3";
  ASSERT_TRUE(terminal->Input("env --default-signal=INT " + sleeper + "\n"));
  for (int i = 0; i < 100 && !ProcessRunning(sleeper); ++i) std::this_thread::sleep_for(milliseconds(50));
  ASSERT_TRUE(ProcessRunning(sleeper));
  ASSERT_TRUE(terminal->Input("\x03"));
  for (int i = 0; i < 100 && ProcessRunning(sleeper); ++i) std::this_thread::sleep_for(milliseconds(50));
  EXPECT_FALSE(ProcessRunning(sleeper)) << "^C did not stop the foreground job";
  ASSERT_TRUE(terminal->OutputUntil("^C", &output)) << output;
  std::this_thread::sleep_for(milliseconds(200));  // bash back at its prompt
  ASSERT_TRUE(terminal->Input("echo $((40+2))-alive\n"));
  ASSERT_TRUE(terminal->OutputUntil("42-alive", &output)) << output;

  ASSERT_TRUE(terminal->Send(true, R"({"type":"ping"})"));
  ASSERT_TRUE(terminal->Send(true, R"({"type":"dance"})"));
  ASSERT_TRUE(terminal->Input("exit 3\n"));
  std::vector<std::string> texts;
  std::string tail;
  while (auto frame = terminal->Read()) {
    (frame->text ? texts.emplace_back() : tail) += frame->data;
  }
  ASSERT_GE(texts.size(), 3u) << output << "\n--- then ---\n" << tail;
  EXPECT_EQ(texts[0], "{\"type\":\"pong\"}\n");
  EXPECT_EQ(texts[1], "{\"type\":\"error\",\"error\":\"unknown frame type \\\"dance\\\"\",\"code\":\"INVALID_FRAME\"}\n");
  EXPECT_EQ(texts.back(), "{\"type\":\"exit\",\"exit_code\":3}\n");
  EXPECT_TRUE(terminal->closed());
  EXPECT_EQ(terminal->close_code(), 1000);
  EXPECT_EQ(terminal->close_reason(), "process exited");

  // The session stays; the next connection starts a new shell, offsets going on.
  auto status = Status(id);
  EXPECT_FALSE(status["running"].GetBool());
  const uint64_t total = status["output_offset"].GetUint64();
  EXPECT_GT(total, 0u);
  auto again = Attach(id, "since=" + std::to_string(total));
  ASSERT_NE(again, nullptr);
  auto first = again->Read();
  ASSERT_TRUE(first && first->text) << "no replay is owed past the total";
  EXPECT_NE(first->data.find("\"connected\""), std::string::npos);
  ASSERT_TRUE(again->Input("echo second-$((2+2))\n"));
  std::string more;
  ASSERT_TRUE(again->OutputUntil("second-4", &more)) << more;
  EXPECT_TRUE(Status(id)["running"].GetBool());
}

TEST_F(PtyTest, ReplaySecondClientAndTakeover) {
  const std::string id = NewPty();
  auto holder = Attach(id);
  ASSERT_NE(holder, nullptr);
  ASSERT_TRUE(holder->Read());  // connected
  std::string output;
  ASSERT_TRUE(holder->Input("echo first-$((0+1))\n"));
  ASSERT_TRUE(holder->OutputUntil("first-1\r\n", &output)) << output;

  int status = 0;
  EXPECT_EQ(Attach(id, "", &status), nullptr);
  EXPECT_EQ(status, 409) << declined_;

  auto taker = Attach(id, "takeover=1");
  ASSERT_NE(taker, nullptr);
  // The replay comes first: 0x03, the 8-byte big-endian offset of its first byte (0:
  // everything is still buffered), then the bytes; then `connected`.
  auto replay = taker->Read();
  ASSERT_TRUE(replay && !replay->text);
  ASSERT_GE(replay->data.size(), 9u);
  EXPECT_EQ(replay->data[0], 0x03);
  EXPECT_EQ(replay->data.substr(1, 8), std::string(8, '\0'));
  // Everything the holder saw, and what came after it.
  EXPECT_EQ(replay->data.compare(9, output.size(), output), 0) << replay->data;
  auto connected = taker->Read();
  ASSERT_TRUE(connected && connected->text);
  EXPECT_NE(connected->data.find("\"connected\""), std::string::npos);

  // The holder is let go with 4001.
  while (holder->Read(milliseconds(5000))) {
  }
  EXPECT_TRUE(holder->closed());
  EXPECT_EQ(holder->close_code(), 4001);
  EXPECT_EQ(holder->close_reason(), "TAKEN_OVER");

  // Same shell: what the first client typed is still there.
  std::string after;
  ASSERT_TRUE(taker->Input("echo still-$$\n"));
  ASSERT_TRUE(taker->OutputUntil("still-", &after)) << after;
}

TEST_F(PtyTest, PipeModeKeepsStderrApart) {
  const std::string id = NewPty();
  auto terminal = Attach(id, "pty=0");
  ASSERT_NE(terminal, nullptr);
  auto connected = terminal->Read();
  ASSERT_TRUE(connected && connected->text);
  EXPECT_NE(connected->data.find("\"mode\":\"pipe\""), std::string::npos) << connected->data;
  ASSERT_TRUE(terminal->Input("echo out; echo err >&2\n"));
  std::string out, err;
  for (int i = 0; i < 4 && (out.empty() || err.empty()); ++i) {
    auto frame = terminal->Read();
    ASSERT_TRUE(frame && !frame->text);
    (frame->data[0] == 1 ? out : err) += frame->data.substr(1);
  }
  EXPECT_EQ(out, "out\n");
  EXPECT_EQ(err, "err\n");
}

TEST_F(PtyTest, DeletingASessionEndsItsShell) {
  const std::string id = NewPty();
  auto terminal = Attach(id);
  ASSERT_NE(terminal, nullptr);
  ASSERT_TRUE(terminal->Read());
  auto res = execd_->client->Delete(execd_->Path("/pty/" + id).c_str());
  EXPECT_EQ(res->status, 200);
  std::string last;
  while (auto frame = terminal->Read()) {
    if (frame->text) last = frame->data;
  }
  EXPECT_EQ(last, "{\"type\":\"exit\",\"exit_code\":-1}\n");
  EXPECT_EQ(terminal->close_code(), 1000);
  int status = 0;
  EXPECT_EQ(Attach(id, "", &status), nullptr);
  EXPECT_EQ(status, 404) << declined_;
  EXPECT_NE(declined_.find("CONTEXT_NOT_FOUND"), std::string::npos) << declined_;
}

// The server proxy (proxy.py, _fail_client_websocket) never passes a refused handshake
// on: it completes the client's upgrade, then closes with 1008 and an empty reason when
// execd refused it (here its 409 for a held terminal, its 404 for an unknown one), and
// 1011 when the sandbox cannot be reached. A handshake execd takes is relayed.
TEST_F(PtyTest, TheServerProxyClosesRefusedUpgradesWith1008Or1011) {
  const std::string sandbox = fake_.CreateSandbox();
  execd_ = std::make_unique<EndpointClient>(fake_.ExecdEndpoint(sandbox));
  const std::string id = NewPty();
  auto through_proxy = [&](const std::string& sandbox_id, const std::string& pty_id, int* code) {
    auto terminal = std::make_unique<Terminal>();
    const std::string target = "/v1/sandboxes/" + sandbox_id + "/proxy/44772/pty/" + pty_id + "/ws";
    int status = 0;
    if (!terminal->Connect("127.0.0.1", fake_.server->port(), target, &status)) {
      ADD_FAILURE() << "the proxy did not take the upgrade: " << status;
      return terminal;
    }
    // Either `connected` (relayed from execd) or the proxy's close.
    while (auto frame = terminal->Read()) {
      if (frame->text && frame->data.find("connected") != std::string::npos) return terminal;
    }
    *code = terminal->close_code();
    EXPECT_TRUE(terminal->close_reason().empty()) << terminal->close_reason();
    return terminal;
  };
  int code = 0;
  auto holder = through_proxy(sandbox, id, &code);
  EXPECT_EQ(code, 0) << "the first connection was refused";
  code = 0;
  through_proxy(sandbox, id, &code);  // held: execd answers 409 without takeover
  EXPECT_EQ(code, 1008);
  code = 0;
  through_proxy(sandbox, "no-such-terminal", &code);  // execd's 404
  EXPECT_EQ(code, 1008);
  code = 0;
  through_proxy("no-such-sandbox", id, &code);  // nothing to resolve
  EXPECT_EQ(code, 1011);
}

// Before 1.0.19 (4db3a993, b98bf143) execd ignores the terminal's `command` (a plain shell
// starts) and `takeover` (a held terminal answers 409 to every other client); from 1.0.10
// it has terminals at all.
TEST(PtyReleaseTest, BeforeOneNineteenCommandAndTakeoverAreIgnored) {
  FakeConfig config = TestConfig();
  config.execd_version = "1.0.18";
  TestFake fake(config);
  EndpointClient execd(fake.ExecdEndpoint(fake.CreateSandbox()));
  auto created = execd.client->Post(execd.Path("/pty").c_str(), R"({"command":"echo from-the-command; exit 3"})",
                                    "application/json");
  ASSERT_EQ(created->status, 201) << created->body;
  const std::string id = ParseJson(created->body)["session_id"].GetString();
  Terminal holder;
  ASSERT_TRUE(holder.Connect(execd.host, execd.port, execd.Path("/pty/" + id + "/ws")));
  ASSERT_TRUE(holder.Read());  // connected
  ASSERT_TRUE(holder.Input("echo shell-$((40+2))\n"));
  std::string output;
  ASSERT_TRUE(holder.OutputUntil("shell-42\r\n", &output)) << output;  // a shell, not the command
  EXPECT_EQ(output.find("from-the-command"), std::string::npos) << output;
  Terminal taker;
  int status = 0;
  EXPECT_FALSE(taker.Connect(execd.host, execd.port, execd.Path("/pty/" + id + "/ws?takeover=1"), &status));
  EXPECT_EQ(status, 409);

  config.execd_version = "1.0.9";
  TestFake oldest(config);
  EndpointClient none(oldest.ExecdEndpoint(oldest.CreateSandbox()));
  auto refused = none.client->Post(none.Path("/pty").c_str(), "{}", "application/json");
  EXPECT_EQ(refused->status, 404);
  EXPECT_EQ(refused->body, "404 page not found");
}

}  // namespace
}  // namespace fake_opensandbox
