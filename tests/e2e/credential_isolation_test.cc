// One bridge, many sessions with different configurations at once: what the bridge keeps
// (sandbox endpoints, execd access) is keyed by server and credential, so a session only
// ever reaches a sandbox the server grants to its own API key. The fake counts the
// lifecycle requests it refused for a wrong key, which shows that a session's request
// went to the server with its own key instead of being served from another's cache.

#include <memory>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "tests/e2e/harness.h"

namespace abx::e2e {
namespace {

constexpr char kSecondKey[] = "e2e-Second-4d2b8e60-KEY";
constexpr char kWrongKey[] = "e2e-Wrong-9c17f2aa-KEY";

class CredentialIsolationTest : public TestEnv {
 protected:
  // The fake accepts two keys (each sees every sandbox, as two keys of one account).
  std::vector<std::string> FakeFlags() const override {
    return {"--api-key", kApiKey, "--api-key", kSecondKey};
  }

  // A sandbox made and used by a shim holding the right key: the bridge then caches
  // its execd endpoint under that key.
  std::string SandboxUsedByFirstShim(EppSession** first) {
    *first = StartInitializedShim();
    if (*first == nullptr) return "";
    const std::string sandbox = CreateSandbox(*first);
    if (sandbox.empty()) return "";
    MessagePtr ran = (*first)->Request(
        "exec.run", JsonObject().Str("sandbox_id", sandbox).Str("command", "echo first").str(),
        Millis(20000));
    if (!ran || ran->IsError() || GetString(ran->result(), "stdout") != "first\n") {
      ADD_FAILURE() << "exec.run with the right key: " << (ran ? ran->raw : "no answer");
      return "";
    }
    return sandbox;
  }

  static std::vector<std::pair<std::string, std::string>> CallsOn(const std::string& sandbox) {
    return {
        {"exec.run", JsonObject().Str("sandbox_id", sandbox).Str("command", "echo leaked").str()},
        {"files.read", JsonObject().Str("sandbox_id", sandbox).Str("path", "/etc/hostname").str()},
        {"sandbox.get", JsonObject().Str("sandbox_id", sandbox).str()},
    };
  }
};

TEST_F(CredentialIsolationTest, WrongKeyNeverUsesAnotherSessionsCachedSandbox) {
  REQUIRE_FAKE("counts refused keys at the fake");
  EppSession* first = nullptr;
  const std::string sandbox = SandboxUsedByFirstShim(&first);
  ASSERT_FALSE(sandbox.empty());
  const auto bridge = BridgePid();
  ASSERT_TRUE(bridge.has_value());

  EppSession* intruder = StartInitializedShim({{"ABX_OPENSANDBOX_API_KEY", kWrongKey}});
  ASSERT_NE(intruder, nullptr);
  EXPECT_EQ(BridgePid().value_or(-1), *bridge) << "the second shim did not share the bridge";

  auto before = fake().Stats();
  ASSERT_TRUE(before.has_value());
  const auto calls = CallsOn(sandbox);
  for (const auto& [method, params] : calls) {
    MessagePtr answer = intruder->Request(method, params, Millis(20000));
    ASSERT_NE(answer, nullptr) << "no answer to " << method;
    EXPECT_TRUE(answer->IsError()) << method << " with a wrong key succeeded: " << answer->raw;
    EXPECT_EQ(answer->EppCode(), "E8003") << method << ": " << answer->raw;
    EXPECT_EQ(answer->raw.find("leaked"), std::string::npos) << answer->raw;
    EXPECT_EQ(answer->raw.find(kWrongKey), std::string::npos) << answer->raw;
  }
  auto after = fake().Stats();
  ASSERT_TRUE(after.has_value());
  // Each call went to the lifecycle API with the intruder's own key and was refused
  // there; none reached the sandbox's execd through the endpoint cached for the first key.
  EXPECT_GE(after->auth_rejected - before->auth_rejected, static_cast<int64_t>(calls.size()))
      << "the server refused fewer requests than the wrong-key session made: some were "
         "answered from state of another credential";
  EXPECT_EQ(after->execd_requests - before->execd_requests, 0)
      << "a session with a wrong key reached execd";

  // The first session is undisturbed.
  MessagePtr again = first->Request(
      "exec.run", JsonObject().Str("sandbox_id", sandbox).Str("command", "echo still").str(),
      Millis(20000));
  ASSERT_NE(again, nullptr);
  EXPECT_FALSE(again->IsError()) << again->raw;
  EXPECT_EQ(GetString(again->result(), "stdout"), "still\n");
}

TEST_F(CredentialIsolationTest, SecondValidKeyReachesTheSandboxTheServerGrantsIt) {
  REQUIRE_FAKE("starts the fake with two keys");
  EppSession* first = nullptr;
  const std::string sandbox = SandboxUsedByFirstShim(&first);
  ASSERT_FALSE(sandbox.empty());

  EppSession* second = StartInitializedShim({{"ABX_OPENSANDBOX_API_KEY", kSecondKey}});
  ASSERT_NE(second, nullptr);
  auto before = fake().Stats();
  ASSERT_TRUE(before.has_value());
  MessagePtr got = second->Request("sandbox.get", JsonObject().Str("sandbox_id", sandbox).str(),
                                   Millis(20000));
  ASSERT_NE(got, nullptr);
  EXPECT_FALSE(got->IsError()) << got->raw;
  EXPECT_EQ(GetString(got->result(), "id"), sandbox) << got->raw;
  MessagePtr ran = second->Request(
      "exec.run", JsonObject().Str("sandbox_id", sandbox).Str("command", "echo granted").str(),
      Millis(20000));
  ASSERT_NE(ran, nullptr);
  EXPECT_FALSE(ran->IsError()) << ran->raw;
  EXPECT_EQ(GetString(ran->result(), "stdout"), "granted\n") << ran->raw;
  auto after = fake().Stats();
  ASSERT_TRUE(after.has_value());
  EXPECT_EQ(after->auth_rejected - before->auth_rejected, 0);
  // The second key resolved the endpoint itself: a lifecycle request beyond sandbox.get.
  EXPECT_GE(after->requests - before->requests, 2)
      << "the second key's exec.run did not ask the server for the endpoint";
}

TEST_F(CredentialIsolationTest, ShimsOfTwoServersShareOneBridge) {
  REQUIRE_FAKE("runs a second fake");
  std::string error;
  std::unique_ptr<FakeServer> other = FakeServer::Start(
      {"--port", "0", "--api-key", kSecondKey, "--root", root_dir() + "/fake-root-other"},
      logs_dir() + "/fake-other.log", &error);
  ASSERT_NE(other, nullptr) << error;

  EppSession* a = StartInitializedShim();
  ASSERT_NE(a, nullptr);
  EppSession* b = StartInitializedShim(
      {{"ABX_OPENSANDBOX_BASE_URL", other->base_url()}, {"ABX_OPENSANDBOX_API_KEY", kSecondKey}});
  ASSERT_NE(b, nullptr);
  const auto bridge = BridgePid();
  ASSERT_TRUE(bridge.has_value());
  EXPECT_EQ(BridgeProcesses().size(), 1u);

  // Both create at once.
  const int64_t create_a = a->SendRequest("sandbox.create", R"({"template":"base"})");
  const int64_t create_b = b->SendRequest("sandbox.create", R"({"template":"base"})");
  MessagePtr made_a = a->WaitResponse(create_a, Millis(30000));
  MessagePtr made_b = b->WaitResponse(create_b, Millis(30000));
  ASSERT_NE(made_a, nullptr);
  ASSERT_NE(made_b, nullptr);
  ASSERT_FALSE(made_a->IsError()) << made_a->raw;
  ASSERT_FALSE(made_b->IsError()) << made_b->raw;
  const std::string sandbox_a = GetString(made_a->result(), "id");
  const std::string sandbox_b = GetString(made_b->result(), "id");
  ASSERT_NE(sandbox_a, sandbox_b);

  // Both run at once, each on its own server's sandbox.
  const int64_t run_a = a->SendRequest(
      "exec.run", JsonObject().Str("sandbox_id", sandbox_a).Str("command", "echo on-a").str());
  const int64_t run_b = b->SendRequest(
      "exec.run", JsonObject().Str("sandbox_id", sandbox_b).Str("command", "echo on-b").str());
  MessagePtr ran_a = a->WaitResponse(run_a, Millis(20000));
  MessagePtr ran_b = b->WaitResponse(run_b, Millis(20000));
  ASSERT_NE(ran_a, nullptr);
  ASSERT_NE(ran_b, nullptr);
  EXPECT_EQ(GetString(ran_a->result(), "stdout"), "on-a\n") << ran_a->raw;
  EXPECT_EQ(GetString(ran_b->result(), "stdout"), "on-b\n") << ran_b->raw;

  // Each server knows only its own sandbox: the bridge asked the right one.
  auto live_a = fake().Stats();
  auto live_b = other->Stats();
  ASSERT_TRUE(live_a && live_b);
  EXPECT_EQ(live_a->live_sandboxes, 1);
  EXPECT_EQ(live_b->live_sandboxes, 1);
  MessagePtr cross = b->Request("sandbox.get", JsonObject().Str("sandbox_id", sandbox_a).str(),
                                Millis(20000));
  ASSERT_NE(cross, nullptr);
  EXPECT_EQ(cross->EppCode(), "E8005")
      << "the other server's sandbox was found through the shared bridge: " << cross->raw;
  EXPECT_EQ(BridgePid().value_or(-1), *bridge);
  other->Stop();
}

}  // namespace
}  // namespace abx::e2e
