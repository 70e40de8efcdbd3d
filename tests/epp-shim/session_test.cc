#include "epp-shim/session.h"

#include <fcntl.h>
#include <unistd.h>

#include <string>
#include <thread>
#include <vector>

#include "common/platform.h"
#include "gtest/gtest.h"
#include "rapidjson/document.h"
#include "rapidjson/stringbuffer.h"
#include "rapidjson/writer.h"
#include "tests/epp-shim/fake_bridge.h"
#include "tests/epp-shim/shim_test_util.h"

namespace abx::testing {
namespace {

constexpr char kInitialize[] =
    R"({"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocol":"EPP/1"}})";

rapidjson::Document Json(const std::string& line) {
  rapidjson::Document doc;
  doc.Parse(line.c_str());
  EXPECT_FALSE(doc.HasParseError()) << line;
  return doc;
}

bool IsBridgeGone(const std::string& line, const std::string& id_json) {
  rapidjson::Document doc = Json(line);
  if (!doc.IsObject() || !doc.HasMember("error")) return false;
  rapidjson::StringBuffer buffer;
  rapidjson::Writer<rapidjson::StringBuffer> writer(buffer);
  doc["id"].Accept(writer);
  return buffer.GetString() == id_json && doc["error"]["code"].GetInt() == -32001 &&
         std::string(doc["error"]["data"]["epp_code"].GetString()) == "E8002" &&
         doc["error"]["data"]["retryable"].GetBool();
}

class SessionTest : public ::testing::Test {
 protected:
  std::string socket() const { return dir_.path() + "/b.sock"; }
  ShortTempDir dir_;
};

TEST_F(SessionTest, ForwardsLinesInOrderWithSessionStart) {
  auto bridge = FakeBridge::Start(socket(), kTestBuildId);
  ASSERT_NE(bridge, nullptr);
  ResolvedConfig config;
  config.values["base_url"] = "http://127.0.0.1:1";
  config.values["api_key"] = "k-123";
  config.sources["base_url"] = "env:ABX_OPENSANDBOX_BASE_URL";
  config.sources["api_key"] = "file:/h/.abx/config.toml";
  {
    SessionUnderTest session(TestClientOptions(socket()), config);
    session.Send(kInitialize);
    session.Send(R"({"jsonrpc":"2.0","id":"n","method":"test.notify"})");
    session.Send(R"({"jsonrpc":"2.0","method":"$/cancel","params":{"id":99}})");
    for (int i = 2; i < 40; ++i) {
      session.Send(R"({"jsonrpc":"2.0","id":)" + std::to_string(i) + R"(,"method":"m.)" +
                   std::to_string(i) + R"("})");
    }
    std::vector<std::string> lines = session.output().WaitFor(41);
    ASSERT_EQ(lines.size(), 41u);
    EXPECT_EQ(Json(lines[0])["result"]["protocol"], "EPP/1");
    EXPECT_EQ(lines[1], R"({"jsonrpc":"2.0","method":"test.note","params":{}})");
    EXPECT_EQ(Json(lines[2])["id"], "n");
    for (int i = 2; i < 40; ++i) {
      EXPECT_EQ(Json(lines[i + 1])["id"].GetInt(), i) << lines[i + 1];
    }
    session.CloseInput();
    EXPECT_TRUE(session.WaitDone(3000));
    EXPECT_EQ(session.exit_code(), 0);
    EXPECT_FALSE(session.exited_by_bridge());
  }
  EXPECT_TRUE(bridge->WaitForEndedSessions(1, 2000)) << "the half-close did not reach the bridge";
  std::vector<std::string> received = bridge->lines();
  ASSERT_EQ(received.size(), 41u);
  EXPECT_EQ(received[0], kInitialize);
  EXPECT_EQ(received[2], R"({"jsonrpc":"2.0","method":"$/cancel","params":{"id":99}})");

  auto starts = bridge->starts();
  ASSERT_EQ(starts.size(), 1u);
  EXPECT_EQ(starts[0].config().at("base_url"), "http://127.0.0.1:1");
  EXPECT_EQ(starts[0].config().at("api_key"), "k-123");
  EXPECT_EQ(starts[0].config_source().at("api_key"), "file:/h/.abx/config.toml");
  EXPECT_EQ(starts[0].shim_version(), "test-version");
  EXPECT_EQ(starts[0].build_id(), kTestBuildId);
  EXPECT_EQ(starts[0].shim_pid(), getpid());
  EXPECT_TRUE(starts[0].replay_initialize().empty());
  EXPECT_EQ(bridge->hellos(), 1);
}

TEST_F(SessionTest, KeepsBytesOfLinesVerbatim) {
  auto bridge = FakeBridge::Start(socket(), kTestBuildId);
  ASSERT_NE(bridge, nullptr);
  SessionUnderTest session(TestClientOptions(socket()));
  const std::string crlf = R"({"jsonrpc":"2.0","id":5,"method":"m"})" "\r";
  const std::string utf8 = R"({"jsonrpc":"2.0","id":6,"method":"m","params":{"s":"héllo ✓"}})";
  session.SendRaw(crlf + "\n" + utf8 + "\n" + "\n" + "garbage");
  session.CloseInput();
  std::vector<std::string> lines = session.output().WaitFor(4);
  ASSERT_EQ(lines.size(), 4u);
  EXPECT_TRUE(session.WaitDone(3000));
  std::vector<std::string> received = bridge->lines();
  ASSERT_EQ(received.size(), 4u);
  EXPECT_EQ(received[0], crlf);
  EXPECT_EQ(received[1], utf8);
  EXPECT_EQ(received[2], "");
  EXPECT_EQ(received[3], "garbage");  // a last line without newline still counts
}

TEST_F(SessionTest, OversizedLineGoesAsOversized) {
  auto bridge = FakeBridge::Start(socket(), kTestBuildId);
  ASSERT_NE(bridge, nullptr);
  SessionUnderTest session(TestClientOptions(socket()));
  session.Send(kInitialize);
  std::string big = R"({"jsonrpc":"2.0","id":77,"method":"files.write","params":{"data":")";
  big += std::string(kMaxLineBytes, 'A') + R"("}})";
  session.Send(big);
  session.Send(R"({"jsonrpc":"2.0","id":78,"method":"after"})");
  std::vector<std::string> lines = session.output().WaitFor(3);
  ASSERT_EQ(lines.size(), 3u);
  rapidjson::Document too_large = Json(lines[1]);
  EXPECT_EQ(too_large["error"]["code"].GetInt(), -32007);
  EXPECT_EQ(too_large["id"].GetInt(), 77);
  EXPECT_EQ(too_large["error"]["data"]["length"].GetInt64(),
            static_cast<int64_t>(big.size()));
  EXPECT_EQ(Json(lines[2])["id"].GetInt(), 78);
  // The line's first 8 MiB went as parts while it was read; the bridge dropped them
  // with the line, so the next line arrives as it was sent.
  EXPECT_GE(bridge->line_parts().size(), 1u);
  EXPECT_EQ(Json(lines[2])["result"]["bytes"].GetInt(), 42);
}

// The first bytes of a long line cross to the bridge while the host is still writing it.
TEST_F(SessionTest, LongLineCrossesInPartsWhileTheHostWritesIt) {
  auto bridge = FakeBridge::Start(socket(), kTestBuildId);
  ASSERT_NE(bridge, nullptr);
  SessionUnderTest session(TestClientOptions(socket()));
  session.Send(kInitialize);
  ASSERT_EQ(session.output().WaitFor(1).size(), 1u);
  std::string line = R"({"jsonrpc":"2.0","id":9,"method":"files.write","params":{"data":")";
  for (size_t i = 0; line.size() < (3u << 20); ++i) line += static_cast<char>('A' + i % 26);
  line += R"("}})";
  const size_t first = (5u << 20) / 2;
  session.SendRaw(line.substr(0, first));
  size_t parted = 0;
  for (int i = 0; i < 400 && parted < (2u << 20); ++i) {
    usleep(5000);
    parted = 0;
    for (size_t size : bridge->line_parts()) parted += size;
  }
  EXPECT_GE(parted, 2u << 20) << "the start of the line did not reach the bridge before its end";
  EXPECT_LE(parted, first);
  EXPECT_EQ(bridge->lines().size(), 1u);  // only initialize is complete
  session.SendRaw(line.substr(first) + "\n");
  session.Send(R"({"jsonrpc":"2.0","id":10,"method":"short"})");
  std::vector<std::string> lines = session.output().WaitFor(3);
  ASSERT_EQ(lines.size(), 3u);
  EXPECT_EQ(Json(lines[1])["result"]["bytes"].GetInt64(), static_cast<int64_t>(line.size()));
  EXPECT_EQ(Json(lines[2])["result"]["bytes"].GetInt(), 42);
  const std::vector<std::string> received = bridge->lines();
  ASSERT_EQ(received.size(), 3u);
  EXPECT_TRUE(received[1] == line) << "the line was not put back together byte for byte";
  for (size_t size : bridge->line_parts()) EXPECT_GE(size, kLinePartBytes);
}

// Parts belong to the call they went on: when it ends mid-line, the line goes whole on
// the next call, never its end alone.
TEST_F(SessionTest, LineWhosePartsWentOnALostCallGoesWholeOnTheNext) {
  auto bridge = FakeBridge::Start(socket(), kTestBuildId);
  ASSERT_NE(bridge, nullptr);
  SessionUnderTest session(TestClientOptions(socket()));
  session.Send(kInitialize);
  ASSERT_EQ(session.output().WaitFor(1).size(), 1u);
  std::string line = R"({"jsonrpc":"2.0","id":"w","method":"files.write","params":{"data":")";
  line += std::string(2u << 20, 'Q') + R"("}})";
  session.SendRaw(line.substr(0, (3u << 20) / 2));
  for (int i = 0; i < 400 && bridge->line_parts().empty(); ++i) usleep(5000);
  ASSERT_FALSE(bridge->line_parts().empty());
  bridge->Kill();
  auto second = FakeBridge::Start(socket(), kTestBuildId);
  ASSERT_NE(second, nullptr);
  session.SendRaw(line.substr((3u << 20) / 2) + "\n");
  std::vector<std::string> lines = session.output().WaitFor(2);
  ASSERT_EQ(lines.size(), 2u);
  rapidjson::Document reply = Json(lines[1]);
  EXPECT_EQ(std::string(reply["id"].GetString()), "w");
  EXPECT_EQ(reply["result"]["bytes"].GetInt64(), static_cast<int64_t>(line.size()));
  EXPECT_TRUE(reply["result"]["replayed"].GetBool());
  const std::vector<std::string> received = second->lines();
  ASSERT_EQ(received.size(), 1u);
  EXPECT_TRUE(received[0] == line);
  EXPECT_TRUE(second->line_parts().empty());
}

TEST_F(SessionTest, BridgeDeathAnswersInFlightThenReplaysInitialize) {
  auto bridge = FakeBridge::Start(socket(), kTestBuildId);
  ASSERT_NE(bridge, nullptr);
  SessionUnderTest session(TestClientOptions(socket()));
  session.Send(kInitialize);
  ASSERT_EQ(session.output().WaitFor(1).size(), 1u);
  session.Send(R"({"jsonrpc":"2.0","id":5,"method":"test.hang"})");
  session.Send(R"({"jsonrpc":"2.0","id":"five","method":"test.hang"})");
  session.Send(R"({"jsonrpc":"2.0","id":6,"method":"answered"})");
  ASSERT_EQ(session.output().WaitFor(2).size(), 2u);
  // Give the hanging requests time to reach the bridge, then kill it.
  for (int i = 0; i < 200 && bridge->lines().size() < 4; ++i) usleep(5000);
  bridge->Kill();

  std::vector<std::string> lines = session.output().WaitFor(4);
  ASSERT_EQ(lines.size(), 4u);
  EXPECT_TRUE(IsBridgeGone(lines[2], "5") || IsBridgeGone(lines[2], "\"five\"")) << lines[2];
  EXPECT_TRUE(IsBridgeGone(lines[3], "5") || IsBridgeGone(lines[3], "\"five\"")) << lines[3];
  EXPECT_NE(lines[2], lines[3]);
  EXPECT_NE(lines[2].find("the bridge went away"), std::string::npos) << lines[2];

  // A new bridge on the same socket: the next request reconnects and replays.
  auto second = FakeBridge::Start(socket(), kTestBuildId);
  ASSERT_NE(second, nullptr);
  session.Send(R"({"jsonrpc":"2.0","id":7,"method":"after.restart"})");
  lines = session.output().WaitFor(5);
  ASSERT_EQ(lines.size(), 5u);
  rapidjson::Document reply = Json(lines[4]);
  EXPECT_EQ(reply["id"].GetInt(), 7);
  EXPECT_TRUE(reply["result"]["replayed"].GetBool()) << lines[4];
  auto starts = second->starts();
  ASSERT_EQ(starts.size(), 1u);
  EXPECT_EQ(starts[0].replay_initialize(), kInitialize);
  EXPECT_EQ(second->lines(), std::vector<std::string>{R"({"jsonrpc":"2.0","id":7,"method":"after.restart"})"});
}

TEST_F(SessionTest, CallFailureAnswersEveryRequestInFlight) {
  auto bridge = FakeBridge::Start(socket(), kTestBuildId);
  ASSERT_NE(bridge, nullptr);
  SessionUnderTest session(TestClientOptions(socket()));
  session.Send(R"({"jsonrpc":"2.0","id":1,"method":"test.hang"})");
  session.Send(R"({"jsonrpc":"2.0","id":1,"method":"test.hang"})");  // a reused id
  session.Send(R"({"jsonrpc":"2.0","id":2,"method":"test.fail_call"})");
  std::vector<std::string> lines = session.output().WaitFor(3);
  ASSERT_EQ(lines.size(), 3u);
  int ones = 0, twos = 0;
  for (const std::string& line : lines) {
    if (IsBridgeGone(line, "1")) ++ones;
    if (IsBridgeGone(line, "2")) ++twos;
    EXPECT_NE(line.find("simulated bridge failure"), std::string::npos) << line;
  }
  EXPECT_EQ(ones, 2);
  EXPECT_EQ(twos, 1);
  // The initialize was never answered, so the next session starts afresh.
  session.Send(R"({"jsonrpc":"2.0","id":3,"method":"again"})");
  lines = session.output().WaitFor(4);
  ASSERT_EQ(lines.size(), 4u);
  EXPECT_EQ(Json(lines[3])["result"]["session"].GetInt(), 2);
  EXPECT_FALSE(Json(lines[3])["result"]["replayed"].GetBool());
}

TEST_F(SessionTest, ExitEndsTheSession) {
  auto bridge = FakeBridge::Start(socket(), kTestBuildId);
  ASSERT_NE(bridge, nullptr);
  SessionUnderTest session(TestClientOptions(socket()));
  session.Send(kInitialize);
  session.Send(R"({"jsonrpc":"2.0","method":"exit"})");
  ASSERT_EQ(session.output().WaitFor(1).size(), 1u);
  for (int i = 0; i < 400 && !session.exited_by_bridge(); ++i) usleep(5000);
  EXPECT_TRUE(session.exited_by_bridge());
  EXPECT_EQ(session.output().lines().size(), 1u) << "no E8002 after exit";
}

// End of stdin with a bridge that does not finish the session: the shim waits the drain
// timeout, cancels the call, answers what is still in flight with E8002 and leaves.
TEST_F(SessionTest, EndOfInputGivesUpOnABridgeThatDoesNotFinish) {
  auto bridge = FakeBridge::Start(socket(), kTestBuildId);
  ASSERT_NE(bridge, nullptr);
  int input[2], output[2];
  ASSERT_EQ(pipe2(input, O_CLOEXEC), 0);
  ASSERT_EQ(pipe2(output, O_CLOEXEC), 0);
  BridgeClient client(TestClientOptions(socket()));
  ShimSession::Options options;
  options.build_id = kTestBuildId;
  options.drain_timeout_ms = 300;
  auto session = std::make_unique<ShimSession>(&client, output[1], std::move(options));
  const std::string lines = R"({"jsonrpc":"2.0","id":1,"method":"test.ignore_eof"})" "\n"
                            R"({"jsonrpc":"2.0","id":2,"method":"test.hang"})" "\n";
  ASSERT_TRUE(WriteAll(input[1], lines.data(), lines.size()));
  close(input[1]);
  const int64_t start = MonotonicMillis();
  EXPECT_EQ(session->Run(input[0]), 0);
  const int64_t took = MonotonicMillis() - start;
  EXPECT_GE(took, 300);
  EXPECT_LT(took, 1500);
  session.reset();  // its own descriptor of the pipe goes with it
  close(output[1]);
  LineReader reader(output[0]);
  FramedLine line;
  std::vector<std::string> got;
  while (reader.Next(&line)) got.push_back(line.data);
  ASSERT_EQ(got.size(), 2u);
  EXPECT_NE(got[0].find(R"("ignoring":"eof")"), std::string::npos) << got[0];
  EXPECT_TRUE(IsBridgeGone(got[1], "2")) << got[1];
  EXPECT_NE(got[1].find("before the bridge finished the session"), std::string::npos) << got[1];
  EXPECT_TRUE(bridge->WaitForEndedSessions(1, 2000)) << "the bridge never saw the shim go";
  close(input[0]);
  close(output[0]);
}

TEST_F(SessionTest, ExitWithoutBridgeReturnsAtOnce) {
  BridgeClientOptions options = TestClientOptions(socket());
  options.bridge_binary = dir_.path() + "/no-such-bridge";
  SessionUnderTest session(options);
  session.Send(R"({"jsonrpc":"2.0","method":"exit"})");
  EXPECT_TRUE(session.WaitDone(2000));
  EXPECT_EQ(session.exit_code(), 0);
  EXPECT_TRUE(session.output().lines().empty());
}

TEST_F(SessionTest, UnreachableBridgeAnswersEachRequestAndKeepsReading) {
  BridgeClientOptions options = TestClientOptions(socket());
  options.bridge_binary = dir_.path() + "/no-such-bridge";
  SessionUnderTest session(options);
  session.Send(kInitialize);
  session.Send(R"({"jsonrpc":"2.0","method":"$/cancel","params":{"id":1}})");
  session.Send(R"({"jsonrpc":"2.0","id":"b","method":"sandbox.list"})");
  session.Send("not json");
  std::vector<std::string> lines = session.output().WaitFor(3);
  ASSERT_EQ(lines.size(), 3u);
  EXPECT_TRUE(IsBridgeGone(lines[0], "1")) << lines[0];
  EXPECT_TRUE(IsBridgeGone(lines[1], "\"b\"")) << lines[1];
  EXPECT_TRUE(IsBridgeGone(lines[2], "null")) << lines[2];
  EXPECT_NE(lines[0].find(dir_.path() + "/b.log"), std::string::npos) << "names the log: " << lines[0];
  EXPECT_NE(lines[0].find("no-such-bridge"), std::string::npos) << lines[0];
  session.CloseInput();
  EXPECT_TRUE(session.WaitDone(3000));
  EXPECT_EQ(session.exit_code(), 0);
}

// The host stops reading stdout while the bridge floods it: the bridge is held back
// (its writes block once the shim's window is used up) instead of the shim buffering
// everything, stdin is still read and forwarded meanwhile, and once the host reads
// again every line arrives, in order.
TEST_F(SessionTest, HostThatStopsReadingHoldsTheBridgeButStdinStillFlows) {
  auto bridge = FakeBridge::Start(socket(), kTestBuildId);
  ASSERT_NE(bridge, nullptr);
  int input[2], output[2];
  ASSERT_EQ(pipe2(input, O_CLOEXEC), 0);
  ASSERT_EQ(pipe2(output, O_CLOEXEC), 0);
  BridgeClient client(TestClientOptions(socket()));
  ShimSession::Options options;
  options.build_id = kTestBuildId;
  ShimSession session(&client, output[1], std::move(options));
  std::thread runner([&] { session.Run(input[0]); });
  auto send = [&](const std::string& line) {
    const std::string framed = line + "\n";
    ASSERT_TRUE(WriteAll(input[1], framed.data(), framed.size()));
  };

  constexpr int64_t kFlood = 64 << 20;
  send(R"({"jsonrpc":"2.0","id":1,"method":"test.flood","params":{"bytes":)" +
       std::to_string(kFlood) + "}}");
  // Until the bridge's writes stop making progress.
  int64_t last = -1;
  int64_t quiet_since = MonotonicMillis();
  for (int64_t start = MonotonicMillis(); MonotonicMillis() - quiet_since < 700;) {
    ASSERT_LT(MonotonicMillis() - start, 30000) << "the flood never settled";
    const int64_t now_bytes = bridge->flood_bytes();
    if (now_bytes != last) {
      last = now_bytes;
      quiet_since = MonotonicMillis();
    }
    usleep(20000);
  }
  // What may be out: the pipe, the shim's stdout buffer up to the hold mark, one
  // receive window (16 MiB), and what grpc++ buffers on the bridge's side.
  EXPECT_GT(last, 0);
  EXPECT_LT(last, 24 << 20) << "the bridge was not held back";

  send(R"({"jsonrpc":"2.0","id":2,"method":"during.hold"})");
  bool received = false;
  for (int i = 0; i < 250 && !received; ++i) {
    for (const std::string& line : bridge->lines()) received |= line.find("during.hold") != std::string::npos;
    if (!received) usleep(20000);
  }
  EXPECT_TRUE(received) << "stdin stopped while stdout was not read";

  // The host reads again: everything arrives.
  LineReader reader(output[0]);
  FramedLine line;
  int next_seq = 0;
  bool flood_answered = false, during_answered = false;
  while (!(flood_answered && during_answered) && reader.Next(&line)) {
    if (line.data.find(R"("method":"test.flood")") != std::string::npos) {
      ASSERT_FALSE(flood_answered) << "a flood line after the flood's answer";
      ASSERT_NE(line.data.find("\"seq\":" + std::to_string(next_seq) + ","), std::string::npos)
          << "out of order: expected seq " << next_seq;
      ++next_seq;
    } else if (line.data.find(R"("id":1,)") != std::string::npos) {
      EXPECT_NE(line.data.find(R"("flooded":)"), std::string::npos) << line.data;
      flood_answered = true;
    } else if (line.data.find(R"("id":2,)") != std::string::npos) {
      during_answered = true;
    }
  }
  EXPECT_TRUE(flood_answered);
  EXPECT_TRUE(during_answered);
  EXPECT_GE(int64_t{next_seq} * 65400, kFlood - 65536);
  close(input[1]);
  runner.join();
  close(input[0]);
  close(output[0]);
  close(output[1]);
}

TEST_F(SessionTest, EndOfInputWithoutAnyLineNeverTouchesTheBridge) {
  BridgeClientOptions options = TestClientOptions(socket());
  SessionUnderTest session(options);
  session.CloseInput();
  EXPECT_TRUE(session.WaitDone(2000));
  EXPECT_EQ(access(socket().c_str(), F_OK), -1) << "no bridge should have been started";
}

}  // namespace
}  // namespace abx::testing
