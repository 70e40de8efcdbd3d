// The shared bridge as shims see it: the first shim starts it, later and concurrent
// shims reuse the same one, it outlives a shim, and secrets stay out of its argv and logs.

#include <unistd.h>

#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "tests/e2e/harness.h"

namespace abx::e2e {
namespace {

class BridgeLifecycleTest : public TestEnv {};

TEST_F(BridgeLifecycleTest, FirstShimStartsTheBridgeAndASecondReusesIt) {
  ASSERT_FALSE(FileExists(socket_path())) << "a socket exists before any shim ran";
  ASSERT_TRUE(BridgeProcesses().empty()) << "a bridge serves our socket before any shim ran";

  EppSession* first = StartInitializedShim();
  ASSERT_NE(first, nullptr);
  EXPECT_TRUE(IsSocket(socket_path())) << socket_path() << " is not a socket after initialize";
  auto pid = BridgePid();
  ASSERT_TRUE(pid.has_value()) << "no pid in " << lock_path() << ": \""
                               << ReadFile(lock_path()) << "\"";
  EXPECT_TRUE(ProcessAlive(*pid)) << "pid " << *pid << " from the lock file is not running";
  EXPECT_NE(*pid, first->pid()) << "the shim wrote its own pid: the bridge must be apart";
  EXPECT_NE(ProcessCommandLine(*pid).find("serve"), std::string::npos)
      << "pid " << *pid << " is " << ProcessCommandLine(*pid);

  EppSession* second = StartInitializedShim();
  ASSERT_NE(second, nullptr);
  EXPECT_EQ(BridgePid().value_or(-1), *pid) << "the second shim did not reuse the bridge";
  EXPECT_EQ(BridgeProcesses().size(), 1u);

  // Both sessions work at the same time through the one bridge.
  MessagePtr a = first->Request("sandbox.list", "{}");
  MessagePtr b = second->Request("sandbox.list", "{}");
  ASSERT_NE(a, nullptr);
  ASSERT_NE(b, nullptr);
  EXPECT_FALSE(a->IsError()) << a->raw;
  EXPECT_FALSE(b->IsError()) << b->raw;
}

TEST_F(BridgeLifecycleTest, BridgeOutlivesAShimAndTheNextShimReusesIt) {
  EppSession* first = StartInitializedShim();
  ASSERT_NE(first, nullptr);
  auto pid = BridgePid();
  ASSERT_TRUE(pid.has_value());
  first->CloseStdin();
  auto status = first->WaitExit(Millis(2000));
  ASSERT_TRUE(status.has_value()) << "the shim did not exit on end of stdin";
  std::this_thread::sleep_for(Millis(200));
  EXPECT_TRUE(ProcessAlive(*pid)) << "the bridge died with its first shim";

  EppSession* second = StartInitializedShim();
  ASSERT_NE(second, nullptr);
  EXPECT_EQ(BridgePid().value_or(-1), *pid);
  MessagePtr listed = second->Request("sandbox.list", "{}");
  ASSERT_NE(listed, nullptr);
  EXPECT_FALSE(listed->IsError()) << listed->raw;
}

TEST_F(BridgeLifecycleTest, ConcurrentShimsStartOneBridge) {
  constexpr int kShims = 4;
  std::vector<EppSession*> shims;
  for (int i = 0; i < kShims; ++i) {
    EppSession* shim = StartShim();
    ASSERT_NE(shim, nullptr);
    shims.push_back(shim);
  }
  // All initialize at once, racing to start the bridge.
  std::vector<int64_t> ids;
  for (EppSession* shim : shims) {
    ids.push_back(shim->SendRequest(
        "initialize", R"({"protocol":"EPP/1","host":{"name":"abx","version":"1.4.0"}})"));
  }
  for (int i = 0; i < kShims; ++i) {
    MessagePtr response = shims[i]->WaitResponse(ids[i], Millis(20000));
    ASSERT_NE(response, nullptr) << "shim " << i << " got no answer to initialize";
    EXPECT_FALSE(response->IsError()) << "shim " << i << ": " << response->raw;
  }
  std::this_thread::sleep_for(Millis(300));  // losing racers exit
  std::vector<pid_t> bridges = BridgeProcesses();
  EXPECT_EQ(bridges.size(), 1u) << "bridges serving " << socket_path();
  auto pid = BridgePid();
  ASSERT_TRUE(pid.has_value());
  if (bridges.size() == 1) {
    EXPECT_EQ(bridges[0], *pid);
  }
  for (int i = 0; i < kShims; ++i) {
    MessagePtr listed = shims[i]->Request("sandbox.list", "{}");
    ASSERT_NE(listed, nullptr) << "shim " << i;
    EXPECT_FALSE(listed->IsError()) << "shim " << i << ": " << listed->raw;
  }
}

TEST_F(BridgeLifecycleTest, ApiKeyNeverInArgvLogsOrOutput) {
  const std::string key = api_key();
  if (key.empty()) GTEST_SKIP() << "the live server takes no API key: there is none to look for";
  EppSession* shim = StartInitializedShim();
  ASSERT_NE(shim, nullptr);
  const std::string sandbox = CreateSandbox(shim);
  ASSERT_FALSE(sandbox.empty());
  MessagePtr ran = shim->Request(
      "exec.run", JsonObject().Str("sandbox_id", sandbox).Str("command", "echo hi").str(),
      Millis(20000));
  ASSERT_NE(ran, nullptr);
  MessagePtr info = shim->Request("provider.info", "{}");
  MessagePtr doctor = shim->Request("provider.doctor", "{}", Millis(20000));

  for (pid_t pid : BridgeProcesses()) {
    EXPECT_EQ(ProcessCommandLine(pid).find(key), std::string::npos)
        << "the bridge's argv holds the API key";
  }
  for (const MessagePtr& m : shim->AllMessages()) {
    EXPECT_EQ(m->raw.find(key), std::string::npos) << "stdout: " << m->raw;
  }
  EXPECT_EQ(shim->StderrText().find(key), std::string::npos) << "the shim's stderr";
  EXPECT_EQ(ReadFile(bridge_log_path()).find(key), std::string::npos) << "the bridge log";
  ASSERT_NE(info, nullptr) << "no answer to provider.info";
  EXPECT_FALSE(info->IsError()) << info->raw;
  EXPECT_NE(info->raw.find("***"), std::string::npos)
      << "provider.info shows no masked secret: " << info->raw;
  ASSERT_NE(doctor, nullptr) << "no answer to provider.doctor";
  EXPECT_FALSE(doctor->IsError()) << doctor->raw;
}

TEST_F(BridgeLifecycleTest, WrongApiKeyIsE8003WithoutTheKey) {
  const std::string wrong_key = "e2e-Wrong-55aa01-KEY";
  EppSession* shim = StartInitializedShim({{"ABX_OPENSANDBOX_API_KEY", wrong_key}});
  ASSERT_NE(shim, nullptr);
  MessagePtr response = shim->Request("sandbox.create", R"({"template":"base"})", Millis(20000));
  ASSERT_NE(response, nullptr);
  ASSERT_TRUE(response->IsError()) << response->raw;
  EXPECT_EQ(response->ErrorCode(), -32002) << response->raw;
  EXPECT_EQ(response->EppCode(), "E8003") << response->raw;
  EXPECT_EQ(response->raw.find(wrong_key), std::string::npos) << response->raw;
  EXPECT_EQ(ReadFile(bridge_log_path()).find(wrong_key), std::string::npos) << "the bridge log";
  EXPECT_EQ(shim->StderrText().find(wrong_key), std::string::npos) << "the shim's stderr";
}

TEST_F(BridgeLifecycleTest, StopCommandEndsTheBridge) {
  EppSession* shim = StartInitializedShim();
  ASSERT_NE(shim, nullptr);
  auto pid = BridgePid();
  ASSERT_TRUE(pid.has_value());
  shim->CloseStdin();
  ASSERT_TRUE(shim->WaitExit(Millis(2000)).has_value());

  std::string output;
  auto status = RunCommand({BridgeBinary(), "stop", "--socket", socket_path()}, ShimEnv(),
                           Millis(5000), &output);
  ASSERT_TRUE(status.has_value()) << "bridge stop did not finish: " << output;
  EXPECT_TRUE(status->exited && status->code == 0) << status->ToString() << ": " << output;
  const auto deadline = Clock::now() + Millis(5000);
  while (ProcessAlive(*pid) && Clock::now() < deadline) {
    std::this_thread::sleep_for(Millis(20));
  }
  EXPECT_FALSE(ProcessAlive(*pid)) << "the bridge still runs 5 s after stop";
}

}  // namespace
}  // namespace abx::e2e
