#include "epp-shim/bridge_client.h"

#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "common/bridge_paths.h"
#include "common/platform.h"
#include "gtest/gtest.h"
#include "tests/epp-shim/fake_bridge.h"
#include "tests/epp-shim/shim_test_util.h"

namespace abx::testing {
namespace {

class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) {
    if (const char* old = getenv(name)) old_ = old, had_ = true;
    if (value) setenv(name, value, 1); else unsetenv(name);
  }
  ~ScopedEnv() {
    if (had_) setenv(name_.c_str(), old_.c_str(), 1); else unsetenv(name_.c_str());
  }

 private:
  std::string name_, old_;
  bool had_ = false;
};

std::string ReadAll(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// Kills the bridge serving `socket_path` (pid from its lock file).
void KillBridge(const std::string& socket_path) {
  const int pid = std::atoi(ReadAll(LockPathFor(socket_path)).c_str());
  ASSERT_GT(pid, 0);
  kill(pid, SIGKILL);
  // Wait for the kernel to drop the lock: the socket then refuses connections.
  for (int i = 0; i < 400 && CanConnectUnix(socket_path, 50); ++i) usleep(5000);
}

class BridgeClientTest : public ::testing::Test {
 protected:
  void SetUp() override { setenv("FAKE_BRIDGE_BUILD_ID", kTestBuildId, 1); }
  void TearDown() override { unsetenv("FAKE_BRIDGE_BUILD_ID"); }
  std::string socket() const { return dir_.path() + "/b.sock"; }
  ShortTempDir dir_;
};

TEST_F(BridgeClientTest, StartsTheBridgeWhenNoneRuns) {
  BridgeClient client(TestClientOptions(socket()));
  BridgeConnection connection;
  std::string error;
  ASSERT_TRUE(client.Connect(&connection, &error)) << error;
  EXPECT_EQ(connection.hello.build_id, kTestBuildId);
  EXPECT_EQ(connection.socket_path, socket());
  EXPECT_EQ(connection.log_path, dir_.path() + "/b.log");
  EXPECT_NE(ReadAll(connection.log_path).find("fake bridge: serving"), std::string::npos);
  struct stat st;
  ASSERT_EQ(stat(dir_.path().c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 077, 0u);

  // A second client finds the running bridge and starts nothing.
  BridgeClient again(TestClientOptions(socket()));
  BridgeConnection second;
  ASSERT_TRUE(again.Connect(&second, &error)) << error;
  EXPECT_EQ(second.hello.pid, connection.hello.pid);
}

TEST_F(BridgeClientTest, RestartsAfterTheBridgeDied) {
  BridgeClient client(TestClientOptions(socket()));
  BridgeConnection first;
  std::string error;
  ASSERT_TRUE(client.Connect(&first, &error)) << error;
  KillBridge(socket());
  ASSERT_EQ(ProbeUnixSocket(socket(), 100), UnixSocketProbe::kRefused) << "not a stale socket";
  BridgeConnection second;
  ASSERT_TRUE(client.Connect(&second, &error)) << error;
  EXPECT_NE(second.hello.pid, first.hello.pid);
}

TEST_F(BridgeClientTest, RacingClientsShareOneBridge) {
  constexpr int kClients = 4;
  std::vector<std::thread> threads;
  std::vector<int> pids(kClients, 0);
  std::vector<std::string> errors(kClients);
  for (int i = 0; i < kClients; ++i) {
    threads.emplace_back([&, i] {
      BridgeClient client(TestClientOptions(socket()));
      BridgeConnection connection;
      if (client.Connect(&connection, &errors[i])) pids[i] = connection.hello.pid;
    });
  }
  for (std::thread& thread : threads) thread.join();
  for (int i = 0; i < kClients; ++i) {
    EXPECT_GT(pids[i], 0) << errors[i];
    EXPECT_EQ(pids[i], pids[0]);
  }
}

TEST_F(BridgeClientTest, WaitsForASlowBridge) {
  ScopedEnv delay("FAKE_BRIDGE_DELAY_MS", "300");
  BridgeClient client(TestClientOptions(socket()));
  BridgeConnection connection;
  std::string error;
  const int64_t start = MonotonicMillis();
  ASSERT_TRUE(client.Connect(&connection, &error)) << error;
  EXPECT_GE(MonotonicMillis() - start, 300);
}

TEST_F(BridgeClientTest, BridgeFailingAtStartIsReportedWithItsLog) {
  ScopedEnv fail("FAKE_BRIDGE_EXIT", "4");
  BridgeClient client(TestClientOptions(socket()));
  BridgeConnection connection;
  std::string error;
  const int64_t start = MonotonicMillis();
  EXPECT_FALSE(client.Connect(&connection, &error));
  EXPECT_LT(MonotonicMillis() - start, 5000) << "a failed start must not wait the full time";
  EXPECT_NE(error.find("exited with status 4"), std::string::npos) << error;
  EXPECT_NE(error.find(dir_.path() + "/b.log"), std::string::npos) << error;
  EXPECT_NE(ReadAll(dir_.path() + "/b.log").find("exiting 4 as told"), std::string::npos);
}

TEST_F(BridgeClientTest, BridgeThatNeverListensTimesOut) {
  ScopedEnv fail("FAKE_BRIDGE_EXIT", "0");  // as if it lost the lock race to nobody
  BridgeClientOptions options = TestClientOptions(socket());
  options.start_timeout_ms = 400;
  BridgeClient client(options);
  BridgeConnection connection;
  std::string error;
  const int64_t start = MonotonicMillis();
  EXPECT_FALSE(client.Connect(&connection, &error));
  EXPECT_GE(MonotonicMillis() - start, 400);
  EXPECT_NE(error.find("no bridge answered"), std::string::npos) << error;
}

TEST_F(BridgeClientTest, MissingBinaryFailsAtOnce) {
  BridgeClientOptions options = TestClientOptions(socket());
  options.bridge_binary = dir_.path() + "/nothing-here";
  BridgeClient client(options);
  BridgeConnection connection;
  std::string error;
  EXPECT_FALSE(client.Connect(&connection, &error));
  EXPECT_NE(error.find("exec " + dir_.path() + "/nothing-here"), std::string::npos) << error;
}

TEST_F(BridgeClientTest, OtherBuildAtExplicitSocketMovesToOwnPath) {
  auto other = FakeBridge::Start(socket(), "0ther0build00000");
  ASSERT_NE(other, nullptr);
  BridgeClient client(TestClientOptions(socket()));
  BridgeConnection connection;
  std::string error;
  ASSERT_TRUE(client.Connect(&connection, &error)) << error;
  EXPECT_EQ(connection.hello.build_id, kTestBuildId);
  EXPECT_EQ(connection.socket_path, dir_.path() + "/b-7e57b111d000.sock");
  EXPECT_EQ(client.log_path(), dir_.path() + "/b-7e57b111d000.log");
  // The old bridge was left alone.
  EXPECT_TRUE(CanConnectUnix(socket(), 100));
}

TEST_F(BridgeClientTest, OtherBuildAtDefaultSocketIsAnError) {
  auto other = FakeBridge::Start(socket(), "0ther0build00000");
  ASSERT_NE(other, nullptr);
  BridgeClientOptions options = TestClientOptions(socket());
  options.explicit_socket = false;
  BridgeClient client(options);
  BridgeConnection connection;
  std::string error;
  EXPECT_FALSE(client.Connect(&connection, &error));
  EXPECT_NE(error.find("is build 0ther0build00000"), std::string::npos) << error;
}

TEST_F(BridgeClientTest, SocketPathTooLongIsAClearError) {
  BridgeClient client(TestClientOptions(dir_.path() + "/" + std::string(120, 's') + ".sock"));
  BridgeConnection connection;
  std::string error;
  EXPECT_FALSE(client.Connect(&connection, &error));
  EXPECT_NE(error.find("longer than the 107"), std::string::npos) << error;
}

TEST_F(BridgeClientTest, OpenSocketDirectoryIsRefused) {
  const std::string open_dir = dir_.path() + "/open";
  ASSERT_EQ(mkdir(open_dir.c_str(), 0777), 0);
  ASSERT_EQ(chmod(open_dir.c_str(), 0777), 0);
  BridgeClient client(TestClientOptions(open_dir + "/b.sock"));
  BridgeConnection connection;
  std::string error;
  EXPECT_FALSE(client.Connect(&connection, &error));
  EXPECT_NE(error.find("0777"), std::string::npos) << error;
}

TEST_F(BridgeClientTest, SpawnedBridgeGetsNoSecretsAndPlainArgv) {
  ScopedEnv key("ABX_OPENSANDBOX_API_KEY", "secret-key");
  ScopedEnv native("OPEN_SANDBOX_API_KEY", "secret-native");
  ScopedEnv token("ABX_OPENSANDBOX_EXECD_ACCESS_TOKEN", "secret-token");
  ScopedEnv own("ABX_OPENSANDBOX_BRIDGE_IDLE_TIMEOUT", "5");
  std::vector<std::string> env = BridgeClient::BridgeEnvironment(environ);
  bool kept_own = false;
  for (const std::string& entry : env) {
    EXPECT_EQ(entry.find("secret-"), std::string::npos) << entry;
    if (entry == "ABX_OPENSANDBOX_BRIDGE_IDLE_TIMEOUT=5") kept_own = true;
  }
  EXPECT_TRUE(kept_own);
  EXPECT_FALSE(env.empty());

  SessionUnderTest session(TestClientOptions(socket()));
  session.Send(R"({"jsonrpc":"2.0","id":1,"method":"test.env"})");
  std::vector<std::string> lines = session.output().WaitFor(1);
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_NE(lines[0].find(R"("secret_vars":0)"), std::string::npos) << lines[0];
  EXPECT_NE(lines[0].find(R"("serve","--socket",")" + socket() + "\"]"), std::string::npos)
      << lines[0];
}

TEST(RestartReasonTest, Names) {
  EXPECT_STREQ(RestartReasonName(RestartReason::kNewVersion), "NEW_VERSION");
  EXPECT_STREQ(RestartReasonName(RestartReason::kStaleSocket), "STALE_SOCKET");
  EXPECT_STREQ(RestartReasonName(RestartReason::kUnresponsive), "UNRESPONSIVE");
  EXPECT_STREQ(RestartReasonName(RestartReason::kNotRunning), "NOT_RUNNING");
}

}  // namespace
}  // namespace abx::testing
