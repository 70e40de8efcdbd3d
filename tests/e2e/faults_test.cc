// What a session sees when the server misbehaves (the fake's /_fake/faults), and options
// refused before anything is sent (docs/epp1.md §3 provider_options, §4 errors).

#include <string>
#include <thread>

#include <gtest/gtest.h>

#include "tests/e2e/harness.h"

namespace abx::e2e {
namespace {

class FaultsTest : public TestEnv {
 protected:
  void SetUp() override {
    REQUIRE_FAKE("fault switches (/_fake/faults) and request counts (/_fake/stats)");
    TestEnv::SetUp();
  }

  // Polls the fake until live_sandboxes is `want` (or 5 s pass); returns the last value.
  int64_t WaitLiveSandboxes(int64_t want) {
    int64_t live = -1;
    const auto deadline = Clock::now() + Millis(5000);
    do {
      auto stats = fake().Stats();
      if (!stats) return -1;
      live = stats->live_sandboxes;
      if (live == want) break;
      std::this_thread::sleep_for(Millis(50));
    } while (Clock::now() < deadline);
    return live;
  }
};

TEST_F(FaultsTest, NeverRunningEndsInReadyTimeoutAndTheSandboxIsKilled) {
  EppSession* shim = StartInitializedShim();
  ASSERT_NE(shim, nullptr);
  std::string error;
  ASSERT_TRUE(fake().SetFaults(R"({"never_running":true})", &error)) << error;

  const auto start = Clock::now();
  MessagePtr response = shim->Request(
      "sandbox.create", R"({"template":"base","provider_options":{"ready_timeout":2}})",
      Millis(20000));
  ASSERT_NE(response, nullptr) << "no answer to sandbox.create with ready_timeout 2 in 20 s";
  const auto took = std::chrono::duration_cast<Millis>(Clock::now() - start).count();
  ASSERT_TRUE(response->IsError()) << response->raw;
  EXPECT_EQ(response->ErrorCode(), -32005) << response->raw;
  EXPECT_EQ(response->EppCode(), "E8006") << response->raw;
  EXPECT_GE(took, 1500) << "answered before the ready_timeout could pass";
  EXPECT_EQ(WaitLiveSandboxes(0), 0) << "the half-made sandbox was not killed";
}

TEST_F(FaultsTest, ProviderOptionOutsideTheWhitelistIsE8004NamingItBeforeAnyRequest) {
  EppSession* shim = StartInitializedShim();
  ASSERT_NE(shim, nullptr);
  for (const char* key : {"base_url", "api_key", "domain", "frobnicate"}) {
    MessagePtr response;
    const std::string params =
        JsonObject().Str("template", "base").Raw("provider_options", JsonObject().Str(key, "x").str()).str();
    auto upstream = UpstreamRequestsDuring([&] { response = shim->Request("sandbox.create", params); });
    ASSERT_NE(response, nullptr) << "no answer to sandbox.create " << params;
    ASSERT_TRUE(response->IsError()) << response->raw;
    EXPECT_EQ(response->ErrorCode(), -32003) << response->raw;
    EXPECT_EQ(response->EppCode(), "E8004") << response->raw;
    EXPECT_NE(response->ErrorMessage().find(key), std::string::npos)
        << "the message does not name " << key << ": " << response->raw;
    EXPECT_EQ(GetString(response->error(), "data.field"), std::string("provider_options.") + key) << response->raw;
    EXPECT_EQ(upstream.value_or(-1), 0) << key << ": requests were sent upstream";
  }
}

TEST_F(FaultsTest, BrokenStreamEndsWithNullCodeAndAnError) {
  REQUIRE_FAKE_EXECD("reset_stream_after_events cuts the fake's execd streams");
  EppSession* shim = StartInitializedShim();
  ASSERT_NE(shim, nullptr);
  const std::string sandbox = CreateSandbox(shim);
  ASSERT_FALSE(sandbox.empty());
  std::string error;
  ASSERT_TRUE(fake().SetFaults(R"({"reset_stream_after_events":4})", &error)) << error;

  const int64_t id = shim->SendRequest(
      "exec.start", JsonObject()
                        .Str("sandbox_id", sandbox)
                        .Str("command", "for i in 1 2 3 4 5 6 7 8 9 10; do echo $i; sleep 0.1; done; exit 7")
                        .str());
  MessagePtr started = shim->WaitResponse(id);
  ASSERT_NE(started, nullptr);
  ASSERT_FALSE(started->IsError()) << started->raw;
  const std::string exec_id = GetString(started->result(), "exec_id");
  ExecTrace trace = TraceExec(shim, exec_id, started, Millis(20000));
  EXPECT_TRUE(trace.problems.empty()) << JoinProblems(trace);
  ASSERT_NE(trace.exit, nullptr);
  // A code is never made up: the stream broke, so no code, and `error` says why.
  EXPECT_TRUE(IsNull(trace.exit->params(), "exit_code")) << trace.exit->raw;
  const rapidjson::Value* why = Find(trace.exit->params(), "error");
  ASSERT_TRUE(why && why->IsObject()) << trace.exit->raw;
  EXPECT_FALSE(GetString(*why, "message").empty()) << trace.exit->raw;
  EXPECT_TRUE(Find(*why, "code") != nullptr) << trace.exit->raw;
}

TEST_F(FaultsTest, ServerErrorIsMappedAndTheSessionRecovers) {
  EppSession* shim = StartInitializedShim();
  ASSERT_NE(shim, nullptr);
  std::string error;
  ASSERT_TRUE(fake().SetFaults(R"({"error_rate":1.0})", &error)) << error;
  MessagePtr response = shim->Request("sandbox.list", "{}", Millis(30000));
  ASSERT_NE(response, nullptr) << "no answer to sandbox.list while the server answers 503";
  ASSERT_TRUE(response->IsError()) << response->raw;
  // 503 from the server: unreachable/unavailable (E8002) or a server error (E8010).
  EXPECT_TRUE(response->EppCode() == "E8002" || response->EppCode() == "E8010") << response->raw;
  EXPECT_EQ(response->ErrorCode(),
            response->EppCode() == "E8002" ? -32001 : -32009) << response->raw;

  // Once the server recovers, the same session works again.
  ASSERT_TRUE(fake().ClearFaults(&error)) << error;
  MessagePtr again = shim->Request("sandbox.list", "{}", Millis(20000));
  ASSERT_NE(again, nullptr);
  EXPECT_FALSE(again->IsError()) << again->raw;
}

}  // namespace
}  // namespace abx::e2e
