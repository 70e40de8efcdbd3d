// The shim's own gRPC client (epp-shim/grpc_connection.h) against a real grpc++ server
// (the same library the bridge serves with) and against scripted servers that misbehave
// at the HTTP/2 level: large messages both ways, backpressure, statuses, resets, a
// server that dies mid-message, one that answers garbage, one that never answers.

#include "epp-shim/grpc_connection.h"

#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include <grpcpp/grpcpp.h>

#include "common/platform.h"
#include "gtest/gtest.h"
#include "proto/bridge.grpc.pb.h"
#include "tests/epp-shim/shim_test_util.h"

namespace abx::testing {
namespace {

namespace pb = ::abx::opensandbox::v1;
using grpc_protocol::Status;

constexpr char kHello[] = "/abx.opensandbox.v1.Bridge/Hello";
constexpr char kRun[] = "/abx.opensandbox.v1.EppSession/Run";

// ---------------------------------------------------------------------------
// A real grpc++ server whose EppSession.Run behaves as the SessionStart's shim_version
// says: "echo" (every line back), "flood" (config "count" messages of config "size"
// bytes, from a second thread, while the first keeps reading), "fail" (an error status
// after the first line), "hang" (reads until the client goes).

struct ServerState {
  std::mutex mu;
  std::vector<std::string> lines;  // received by any call
  std::atomic<int> flood_written{0};
  std::atomic<bool> flood_done{false};
};

class TestBridgeService final : public pb::Bridge::Service {
 public:
  grpc::Status Hello(grpc::ServerContext*, const pb::HelloRequest* request,
                     pb::HelloReply* reply) override {
    if (request->build_id() == "slow") std::this_thread::sleep_for(std::chrono::milliseconds(1500));
    reply->set_build_id(request->build_id());
    reply->set_version("test");
    reply->set_pid(getpid());
    return grpc::Status::OK;
  }
};

class TestSessionService final : public pb::EppSession::Service {
 public:
  explicit TestSessionService(ServerState* state) : state_(state) {}

  grpc::Status Run(grpc::ServerContext*,
                   grpc::ServerReaderWriter<pb::SessionOutput, pb::SessionInput>* stream) override {
    pb::SessionInput input;
    if (!stream->Read(&input) || !input.has_start()) {
      return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, "no start");
    }
    const pb::SessionStart start = input.start();
    const std::string mode = start.shim_version();
    std::thread flood;
    if (mode == "flood") {
      const int count = std::stoi(start.config().at("count"));
      const size_t size = std::stoul(start.config().at("size"));
      flood = std::thread([this, stream, count, size] {
        for (int i = 0; i < count; ++i) {
          pb::SessionOutput output;
          std::string line(size, static_cast<char>('a' + i % 26));
          memcpy(&line[0], &i, sizeof i);
          output.set_line(std::move(line));
          if (!stream->Write(output)) break;
          state_->flood_written.fetch_add(1);
        }
        state_->flood_done = true;
      });
    }
    grpc::Status result = grpc::Status::OK;
    while (stream->Read(&input)) {
      {
        std::lock_guard<std::mutex> lock(state_->mu);
        state_->lines.push_back(input.line());
      }
      if (mode == "echo") {
        pb::SessionOutput output;
        output.set_line(input.line());
        output.set_response_id("echo");
        stream->Write(output);
      } else if (mode == "fail") {
        result = grpc::Status(grpc::StatusCode::FAILED_PRECONDITION, "100% bad\nnews: \xc3\xa9t\xc3\xa9");
        break;
      }
    }
    if (flood.joinable()) flood.join();
    return result;
  }

 private:
  ServerState* state_;
};

class RealServer {
 public:
  explicit RealServer(const std::string& socket_path) : session_(&state) {
    grpc::ServerBuilder builder;
    builder.AddListeningPort("unix:" + socket_path, grpc::InsecureServerCredentials());
    builder.SetMaxReceiveMessageSize(32 << 20);
    builder.SetMaxSendMessageSize(32 << 20);
    builder.RegisterService(&bridge_);
    builder.RegisterService(&session_);
    server = builder.BuildAndStart();
  }
  ~RealServer() {
    if (server != nullptr) server->Shutdown(std::chrono::system_clock::now());
  }
  std::vector<std::string> lines() {
    std::lock_guard<std::mutex> lock(state.mu);
    return state.lines;
  }

  ServerState state;
  std::unique_ptr<grpc::Server> server;

 private:
  TestBridgeService bridge_;
  TestSessionService session_;
};

// ---------------------------------------------------------------------------
// A server that plays bytes by hand: accepts one connection and runs `script` on it.

class ScriptedServer {
 public:
  ScriptedServer(const std::string& socket_path, std::function<void(int fd)> script) {
    listener_ = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_un address{};
    address.sun_family = AF_UNIX;
    snprintf(address.sun_path, sizeof(address.sun_path), "%s", socket_path.c_str());
    if (bind(listener_, reinterpret_cast<sockaddr*>(&address), sizeof(address)) != 0 ||
        listen(listener_, 4) != 0) {
      abort();
    }
    thread_ = std::thread([this, script] {
      const int fd = accept4(listener_, nullptr, nullptr, SOCK_CLOEXEC);
      if (fd < 0) return;
      script(fd);
      close(fd);
    });
  }
  ~ScriptedServer() {
    shutdown(listener_, SHUT_RDWR);
    thread_.join();
    close(listener_);
  }

 private:
  int listener_;
  std::thread thread_;
};

// Waits up to `ms` for the client to send something, and drops it.
void AwaitBytes(int fd, int ms) {
  pollfd entry{fd, POLLIN, 0};
  char buffer[4096];
  if (poll(&entry, 1, ms) > 0) (void)!read(fd, buffer, sizeof buffer);
}

// Reads and drops what the client sends for `ms` (so closing later is a clean EOF).
void Drain(int fd, int ms) {
  const int64_t until = MonotonicMillis() + ms;
  char buffer[4096];
  while (MonotonicMillis() < until) {
    pollfd entry{fd, POLLIN, 0};
    if (poll(&entry, 1, 10) > 0 && read(fd, buffer, sizeof buffer) <= 0) return;
  }
}

void Send(int fd, const std::string& bytes) {
  ASSERT_TRUE(WriteAll(fd, bytes.data(), bytes.size()));
}

std::string Frame(uint8_t type, uint8_t flags, uint32_t stream, const std::string& payload) {
  std::string frame;
  const uint32_t length = static_cast<uint32_t>(payload.size());
  frame.push_back(static_cast<char>(length >> 16));
  frame.push_back(static_cast<char>(length >> 8));
  frame.push_back(static_cast<char>(length));
  frame.push_back(static_cast<char>(type));
  frame.push_back(static_cast<char>(flags));
  frame.push_back(static_cast<char>(stream >> 24));
  frame.push_back(static_cast<char>(stream >> 16));
  frame.push_back(static_cast<char>(stream >> 8));
  frame.push_back(static_cast<char>(stream));
  return frame + payload;
}

constexpr uint8_t kData = 0, kHeaders = 1, kRstStream = 3, kSettings = 4, kGoAway = 7;
constexpr uint8_t kEndStream = 0x1, kEndHeaders = 0x4, kAck = 0x1;

std::string ServerPreface() {
  return Frame(kSettings, 0, 0, "") + Frame(kSettings, kAck, 0, "");
}

// HPACK: ":status: 200" (static index 8), "content-type: application/grpc" (literal,
// name from static index 31).
std::string GrpcResponseHeaders() {
  return std::string("\x88\x0f\x10\x10", 4) + "application/grpc";
}

// ---------------------------------------------------------------------------
// Client side.

// Collects what a call brings.
class Recorder final : public GrpcCallObserver {
 public:
  void OnMessage(std::string_view payload) override {
    pb::SessionOutput output;
    ASSERT_TRUE(output.ParseFromArray(payload.data(), static_cast<int>(payload.size())));
    bytes += output.line().size();
    if (keep) lines.push_back(output.line());
    ++messages;
  }
  void OnCallEnded(const Status& end) override {
    ended = true;
    status = end;
  }

  bool keep = true;
  std::vector<std::string> lines;
  size_t bytes = 0;
  int messages = 0;
  bool ended = false;
  Status status;
};

// Runs the connection's events until `done` or `timeout_ms`; true when done.
bool Drive(GrpcConnection* connection, const std::function<bool()>& done, int timeout_ms) {
  const int64_t deadline = MonotonicMillis() + timeout_ms;
  while (!done()) {
    if (MonotonicMillis() >= deadline) return false;
    pollfd entry{connection->fd(), connection->poll_events(), 0};
    if (poll(&entry, 1, 10) > 0) connection->OnPollEvents(entry.revents);
  }
  return true;
}

std::string StartMessage(const std::string& mode, int count = 0, size_t size = 0) {
  pb::SessionInput input;
  input.mutable_start()->set_shim_version(mode);
  (*input.mutable_start()->mutable_config())["count"] = std::to_string(count);
  (*input.mutable_start()->mutable_config())["size"] = std::to_string(size);
  return input.SerializeAsString();
}

std::string LineMessage(const std::string& line) {
  pb::SessionInput input;
  input.set_line(line);
  return input.SerializeAsString();
}

class GrpcConnectionTest : public ::testing::Test {
 protected:
  std::string socket() const { return dir_.path() + "/g.sock"; }

  std::unique_ptr<GrpcConnection> Connect(GrpcConnection::Options options = {}) {
    std::string error;
    auto connection = GrpcConnection::Connect(socket(), 1000, options, &error);
    EXPECT_NE(connection, nullptr) << error;
    return connection;
  }

  ShortTempDir dir_;
};

TEST_F(GrpcConnectionTest, HelloThenASessionOnTheSameConnection) {
  RealServer server(socket());
  auto connection = Connect();
  ASSERT_NE(connection, nullptr);
  pb::HelloRequest request;
  request.set_build_id("7e57b111d0000001");
  std::string reply_bytes;
  Status status = connection->CallUnary(kHello, request.SerializeAsString(), 2000, &reply_bytes);
  ASSERT_TRUE(status.ok()) << status.code << " " << status.message;
  pb::HelloReply reply;
  ASSERT_TRUE(reply.ParseFromString(reply_bytes));
  EXPECT_EQ(reply.build_id(), "7e57b111d0000001");
  EXPECT_EQ(reply.pid(), getpid());

  Recorder recorder;
  std::string error;
  ASSERT_TRUE(connection->StartCall(kRun, &recorder, &error)) << error;
  connection->SendMessage(StartMessage("echo"));
  for (int i = 0; i < 100; ++i) connection->SendMessage(LineMessage("line " + std::to_string(i)));
  connection->CloseSend();
  ASSERT_TRUE(Drive(connection.get(), [&] { return recorder.ended; }, 5000));
  EXPECT_TRUE(recorder.status.ok()) << recorder.status.message;
  ASSERT_EQ(recorder.lines.size(), 100u);
  for (int i = 0; i < 100; ++i) EXPECT_EQ(recorder.lines[i], "line " + std::to_string(i));
}

TEST_F(GrpcConnectionTest, UnaryDeadlineEndsTheWaitAndTellsTheServer) {
  RealServer server(socket());
  auto connection = Connect();
  ASSERT_NE(connection, nullptr);
  pb::HelloRequest request;
  request.set_build_id("slow");
  std::string reply;
  const int64_t start = MonotonicMillis();
  const Status status = connection->CallUnary(kHello, request.SerializeAsString(), 200, &reply);
  EXPECT_EQ(status.code, grpc_protocol::kDeadlineExceeded);
  EXPECT_GE(MonotonicMillis() - start, 190);
  EXPECT_LT(MonotonicMillis() - start, 1000);
}

TEST_F(GrpcConnectionTest, UnknownMethodIsATrailersOnlyUnimplemented) {
  RealServer server(socket());
  auto connection = Connect();
  ASSERT_NE(connection, nullptr);
  std::string reply;
  const Status status = connection->CallUnary("/abx.opensandbox.v1.Bridge/NoSuchMethod", "", 2000, &reply);
  EXPECT_EQ(status.code, grpc_protocol::kUnimplemented) << status.message;
}

TEST_F(GrpcConnectionTest, LargeMessagesBothWays) {
  RealServer server(socket());
  auto connection = Connect();
  ASSERT_NE(connection, nullptr);
  Recorder recorder;
  std::string error;
  ASSERT_TRUE(connection->StartCall(kRun, &recorder, &error)) << error;
  connection->SendMessage(StartMessage("echo"));
  std::mt19937 random(7);
  std::vector<std::string> sent;
  for (size_t size : {size_t{8} << 20, size_t{1}, size_t{20} << 20, size_t{65536}}) {
    std::string line(size, '\0');
    for (char& c : line) c = static_cast<char>(random());
    // As the session queues a line: the protobuf header, then the line itself.
    pb::SessionInput header_only;
    header_only.set_line(line);
    const std::string whole = header_only.SerializeAsString();
    const size_t header_size = whole.size() - line.size();
    connection->SendMessage(whole.substr(0, header_size), line);
    sent.push_back(std::move(line));
  }
  connection->CloseSend();
  ASSERT_TRUE(Drive(connection.get(), [&] { return recorder.ended; }, 30000));
  EXPECT_TRUE(recorder.status.ok()) << recorder.status.message;
  ASSERT_EQ(recorder.lines.size(), sent.size());
  for (size_t i = 0; i < sent.size(); ++i) EXPECT_TRUE(recorder.lines[i] == sent[i]) << i;
  EXPECT_EQ(server.lines(), sent);
}

TEST_F(GrpcConnectionTest, MessageOverTheLimitResetsTheCall) {
  RealServer server(socket());
  GrpcConnection::Options options;
  options.max_message_bytes = 1 << 20;
  auto connection = Connect(options);
  ASSERT_NE(connection, nullptr);
  Recorder recorder;
  std::string error;
  ASSERT_TRUE(connection->StartCall(kRun, &recorder, &error)) << error;
  connection->SendMessage(StartMessage("echo"));
  connection->SendMessage(LineMessage(std::string(2 << 20, 'x')));
  ASSERT_TRUE(Drive(connection.get(), [&] { return recorder.ended; }, 10000));
  EXPECT_EQ(recorder.status.code, grpc_protocol::kResourceExhausted) << recorder.status.message;
  EXPECT_EQ(recorder.messages, 0);
}

TEST_F(GrpcConnectionTest, StatusAndPercentEncodedMessageFromTrailers) {
  RealServer server(socket());
  auto connection = Connect();
  ASSERT_NE(connection, nullptr);
  Recorder recorder;
  std::string error;
  ASSERT_TRUE(connection->StartCall(kRun, &recorder, &error)) << error;
  connection->SendMessage(StartMessage("fail"));
  connection->SendMessage(LineMessage("anything"));
  // Our side stays open: the status must still arrive.
  ASSERT_TRUE(Drive(connection.get(), [&] { return recorder.ended; }, 5000));
  EXPECT_EQ(recorder.status.code, 9);  // FAILED_PRECONDITION
  EXPECT_EQ(recorder.status.message, "100% bad\nnews: \xc3\xa9t\xc3\xa9");
  EXPECT_FALSE(connection->call_open());
}

// Held, the receive window stops a flooding server after about one window (16 MiB),
// while what we send still reaches it; released, everything arrives in order.
TEST_F(GrpcConnectionTest, HeldWindowStopsTheServerButNotOurSends) {
  RealServer server(socket());
  auto connection = Connect();
  ASSERT_NE(connection, nullptr);
  Recorder recorder;
  recorder.keep = false;
  std::string error;
  ASSERT_TRUE(connection->StartCall(kRun, &recorder, &error)) << error;
  constexpr int kCount = 768;
  constexpr size_t kSize = 64 << 10;  // 48 MiB in all
  connection->HoldReceiveWindow(true);
  connection->SendMessage(StartMessage("flood", kCount, kSize));

  // Until nothing more arrives for 500 ms.
  size_t last = 0;
  int64_t quiet_since = MonotonicMillis();
  Drive(connection.get(),
        [&] {
          if (recorder.bytes != last) {
            last = recorder.bytes;
            quiet_since = MonotonicMillis();
          }
          return MonotonicMillis() - quiet_since > 500;
        },
        20000);
  const size_t window = 16 << 20;
  EXPECT_LE(recorder.bytes, window) << "more than the window arrived while it was held";
  EXPECT_GE(recorder.bytes, window - 2 * kSize) << "the window was not used";
  const int written = server.state.flood_written.load();
  EXPECT_LT(written, kCount) << "the server was never held back";
  EXPECT_FALSE(server.state.flood_done.load());

  connection->SendMessage(LineMessage("sent while held"));
  ASSERT_TRUE(Drive(connection.get(), [&] { return server.lines().size() == 1; }, 5000))
      << "a send did not get through while the receive window was held";
  EXPECT_EQ(server.lines()[0], "sent while held");

  connection->HoldReceiveWindow(false);
  connection->CloseSend();
  ASSERT_TRUE(Drive(connection.get(), [&] { return recorder.ended; }, 30000));
  EXPECT_TRUE(recorder.status.ok()) << recorder.status.message;
  EXPECT_EQ(recorder.messages, kCount);
  EXPECT_EQ(recorder.bytes, kCount * kSize);
}

TEST_F(GrpcConnectionTest, ServerShutdownEndsTheCall) {
  auto server = std::make_unique<RealServer>(socket());
  auto connection = Connect();
  ASSERT_NE(connection, nullptr);
  Recorder recorder;
  std::string error;
  ASSERT_TRUE(connection->StartCall(kRun, &recorder, &error)) << error;
  connection->SendMessage(StartMessage("hang"));
  connection->SendMessage(LineMessage("first"));
  ASSERT_TRUE(Drive(connection.get(), [&] { return server->lines().size() == 1; }, 5000));
  std::thread stopper([&] { server.reset(); });
  const bool ended = Drive(connection.get(), [&] { return recorder.ended; }, 5000);
  stopper.join();
  ASSERT_TRUE(ended);
  EXPECT_FALSE(recorder.status.ok());
}

TEST_F(GrpcConnectionTest, ServerThatAnswersGarbageFailsAtOnce) {
  ScriptedServer server(socket(), [](int fd) {
    Send(fd, "HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n");
    Drain(fd, 2000);
  });
  auto connection = Connect();
  ASSERT_NE(connection, nullptr);
  std::string reply;
  const int64_t start = MonotonicMillis();
  const Status status = connection->CallUnary(kHello, "", 5000, &reply);
  EXPECT_EQ(status.code, grpc_protocol::kUnavailable) << status.message;
  EXPECT_NE(status.message.find("HTTP/2"), std::string::npos) << status.message;
  EXPECT_LT(MonotonicMillis() - start, 1500) << "garbage must not wait for the deadline";
  EXPECT_FALSE(connection->peer_gone());
}

TEST_F(GrpcConnectionTest, ServerThatClosesAtOnceIsGone) {
  ScriptedServer server(socket(), [](int fd) { Drain(fd, 50); });
  auto connection = Connect();
  ASSERT_NE(connection, nullptr);
  std::string reply;
  const Status status = connection->CallUnary(kHello, "", 5000, &reply);
  EXPECT_EQ(status.code, grpc_protocol::kUnavailable) << status.message;
  EXPECT_TRUE(connection->peer_gone()) << status.message;
}

TEST_F(GrpcConnectionTest, ResetStreamEndsTheCall) {
  ScriptedServer server(socket(), [](int fd) {
    Send(fd, ServerPreface());
    Drain(fd, 100);
    Send(fd, Frame(kRstStream, 0, 1, std::string("\0\0\0\x02", 4)));  // INTERNAL_ERROR
    Drain(fd, 2000);
  });
  auto connection = Connect();
  ASSERT_NE(connection, nullptr);
  Recorder recorder;
  std::string error;
  ASSERT_TRUE(connection->StartCall(kRun, &recorder, &error)) << error;
  connection->SendMessage(StartMessage("echo"));
  ASSERT_TRUE(Drive(connection.get(), [&] { return recorder.ended; }, 5000));
  EXPECT_EQ(recorder.status.code, grpc_protocol::kUnavailable);
  EXPECT_NE(recorder.status.message.find("reset the call"), std::string::npos)
      << recorder.status.message;
}

// A GOAWAY that leaves our stream out (last stream id 0) ends the call at once.
TEST_F(GrpcConnectionTest, GoAwayWithoutOurStreamEndsTheCall) {
  ScriptedServer server(socket(), [](int fd) {
    Send(fd, ServerPreface());
    Drain(fd, 100);
    Send(fd, Frame(kGoAway, 0, 0, std::string("\0\0\0\0\0\0\0\0", 8)));
    Drain(fd, 2000);
  });
  auto connection = Connect();
  ASSERT_NE(connection, nullptr);
  Recorder recorder;
  std::string error;
  ASSERT_TRUE(connection->StartCall(kRun, &recorder, &error)) << error;
  connection->SendMessage(StartMessage("echo"));
  ASSERT_TRUE(Drive(connection.get(), [&] { return recorder.ended; }, 5000));
  EXPECT_EQ(recorder.status.code, grpc_protocol::kUnavailable) << recorder.status.message;
  EXPECT_EQ(recorder.messages, 0);
  // Nothing more can start on it.
  EXPECT_FALSE(connection->StartCall(kRun, &recorder, &error));
}

TEST_F(GrpcConnectionTest, ServerThatDiesMidMessageDeliversNothingOfIt) {
  ScriptedServer server(socket(), [](int fd) {
    Send(fd, ServerPreface());
    Drain(fd, 100);
    Send(fd, Frame(kHeaders, kEndHeaders, 1, GrpcResponseHeaders()));
    pb::SessionOutput whole;
    whole.set_line("a complete message");
    const std::string first = whole.SerializeAsString();
    // One whole message, then the first 10 of a 100-byte one.
    Send(fd, Frame(kData, 0, 1, grpc_protocol::MessagePrefix(first.size()) + first +
                                    grpc_protocol::MessagePrefix(100) + std::string(10, 'x')));
    Drain(fd, 100);
  });
  auto connection = Connect();
  ASSERT_NE(connection, nullptr);
  Recorder recorder;
  std::string error;
  ASSERT_TRUE(connection->StartCall(kRun, &recorder, &error)) << error;
  connection->SendMessage(StartMessage("echo"));
  ASSERT_TRUE(Drive(connection.get(), [&] { return recorder.ended; }, 5000));
  EXPECT_EQ(recorder.status.code, grpc_protocol::kUnavailable) << recorder.status.message;
  EXPECT_TRUE(connection->peer_gone()) << recorder.status.message;
  ASSERT_EQ(recorder.lines.size(), 1u);
  EXPECT_EQ(recorder.lines[0], "a complete message");
}

TEST_F(GrpcConnectionTest, TrailersOnlyAndNonGrpcResponses) {
  ScriptedServer server(socket(), [](int fd) {
    Send(fd, ServerPreface());
    Drain(fd, 100);
    // Trailers-only: :status 200, content-type, grpc-status 14, grpc-message "a%20b"
    // (literal header fields, new names).
    std::string block = GrpcResponseHeaders();
    block += std::string("\x00\x0b", 2) + "grpc-status" + std::string("\x02", 1) + "14";
    block += std::string("\x00\x0c", 2) + "grpc-message" + std::string("\x05", 1) + "a%20b";
    Send(fd, Frame(kHeaders, kEndHeaders | kEndStream, 1, block));
    AwaitBytes(fd, 2000);  // the second call's HEADERS
    // The second call: HTTP 503 and no grpc-status.
    Send(fd, Frame(kHeaders, kEndHeaders | kEndStream, 3, std::string("\x0d\x03", 2) + "503"));
    Drain(fd, 2000);
  });
  auto connection = Connect();
  ASSERT_NE(connection, nullptr);
  std::string reply;
  Status status = connection->CallUnary(kHello, "", 3000, &reply);
  EXPECT_EQ(status.code, grpc_protocol::kUnavailable);
  EXPECT_EQ(status.message, "a b");
  status = connection->CallUnary(kHello, "", 3000, &reply);
  EXPECT_EQ(status.code, grpc_protocol::kUnavailable);
  EXPECT_NE(status.message.find("HTTP status 503"), std::string::npos) << status.message;
}

TEST_F(GrpcConnectionTest, SilentServerTimesOut) {
  ScriptedServer server(socket(), [](int fd) { Drain(fd, 1500); });
  auto connection = Connect();
  ASSERT_NE(connection, nullptr);
  std::string reply;
  const Status status = connection->CallUnary(kHello, "", 300, &reply);
  EXPECT_EQ(status.code, grpc_protocol::kDeadlineExceeded);
}

TEST_F(GrpcConnectionTest, NobodyListeningIsAConnectError) {
  std::string error;
  EXPECT_EQ(GrpcConnection::Connect(socket(), 100, &error), nullptr);
  EXPECT_NE(error.find(socket()), std::string::npos) << error;
}

}  // namespace
}  // namespace abx::testing
