// The first vertical slice, end to end: a sandbox's life (create, get, kill) and commands
// in it (exec.start with its notifications, exec.run, argv quoting, pipelining), through
// shim -> bridge -> fake OpenSandbox server and back.

#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "tests/e2e/harness.h"

namespace abx::e2e {
namespace {

class SliceTest : public TestEnv {
 protected:
  // Polls the fake until live_sandboxes is `want` (or 5 s pass); returns the last value.
  int64_t WaitLiveSandboxes(int64_t want) {
    int64_t live = -1;
    const auto deadline = Clock::now() + Millis(5000);
    do {
      std::string error;
      auto stats = fake().Stats(&error);
      EXPECT_TRUE(stats.has_value()) << error;
      if (!stats) return -1;
      live = stats->live_sandboxes;
      if (live == want) break;
      std::this_thread::sleep_for(Millis(50));
    } while (Clock::now() < deadline);
    return live;
  }

  // exec.run in `sandbox` with `params` (sandbox_id added); the response, or null.
  MessagePtr Run(EppSession* shim, const std::string& sandbox, JsonObject params) {
    return shim->Request("exec.run", params.Str("sandbox_id", sandbox).str(), Millis(20000));
  }
};

TEST_F(SliceTest, SandboxCreateGetKill) {
  EppSession* shim = StartInitializedShim();
  ASSERT_NE(shim, nullptr);

  MessagePtr created = shim->Request("sandbox.create", R"({"template":"base"})", Millis(30000));
  ASSERT_NE(created, nullptr) << "no answer to sandbox.create";
  ASSERT_FALSE(created->IsError()) << created->raw;
  const rapidjson::Value& sandbox = created->result();
  const std::string id = GetString(sandbox, "id");
  ASSERT_FALSE(id.empty()) << created->raw;
  EXPECT_EQ(GetString(sandbox, "state"), "Running") << created->raw;
  EXPECT_EQ(GetString(sandbox, "template"), "base") << created->raw;
  EXPECT_FALSE(GetString(sandbox, "image").empty()) << created->raw;
  EXPECT_FALSE(GetString(sandbox, "created_at").empty()) << created->raw;
  const rapidjson::Value* metadata = Find(sandbox, "metadata");
  EXPECT_TRUE(metadata && metadata->IsObject()) << created->raw;
  if (!live()) {  // a shared live server has others too
    EXPECT_EQ(WaitLiveSandboxes(1), 1);
  }

  MessagePtr got = shim->Request("sandbox.get", JsonObject().Str("sandbox_id", id).str());
  ASSERT_NE(got, nullptr) << "no answer to sandbox.get";
  ASSERT_FALSE(got->IsError()) << got->raw;
  EXPECT_EQ(GetString(got->result(), "id"), id) << got->raw;
  EXPECT_EQ(GetString(got->result(), "state"), "Running") << got->raw;

  MessagePtr killed = shim->Request("sandbox.kill", JsonObject().Str("sandbox_id", id).str());
  ASSERT_NE(killed, nullptr) << "no answer to sandbox.kill";
  ASSERT_FALSE(killed->IsError()) << killed->raw;
  EXPECT_EQ(ToJson(killed->result()), R"({"killed":true})") << killed->raw;
  if (!live()) {
    EXPECT_EQ(WaitLiveSandboxes(0), 0);
  }

  MessagePtr again = shim->Request("sandbox.kill", JsonObject().Str("sandbox_id", id).str());
  ASSERT_NE(again, nullptr) << "no answer to the second sandbox.kill";
  ASSERT_FALSE(again->IsError()) << again->raw;
  EXPECT_EQ(ToJson(again->result()), R"({"killed":false})") << again->raw;
}

TEST_F(SliceTest, KillOfUnknownSandboxIsFalseNotAnError) {
  EppSession* shim = StartInitializedShim();
  ASSERT_NE(shim, nullptr);
  MessagePtr killed =
      shim->Request("sandbox.kill", R"({"sandbox_id":"sbx-e2e-never-existed"})");
  ASSERT_NE(killed, nullptr);
  ASSERT_FALSE(killed->IsError()) << killed->raw;
  EXPECT_EQ(ToJson(killed->result()), R"({"killed":false})") << killed->raw;
}

TEST_F(SliceTest, ExecStartStreamsOutputThenExactlyOneExit) {
  EppSession* shim = StartInitializedShim();
  ASSERT_NE(shim, nullptr);
  const std::string sandbox = CreateSandbox(shim);
  ASSERT_FALSE(sandbox.empty());

  const std::string params = JsonObject()
                                 .Str("sandbox_id", sandbox)
                                 .Str("command", R"(printf 'a\nb\n'; echo err >&2; exit 3)")
                                 .str();
  const int64_t request = shim->SendRequest("exec.start", params);
  MessagePtr started = shim->WaitResponse(request);
  ASSERT_NE(started, nullptr) << "no answer to exec.start " << params;
  ASSERT_FALSE(started->IsError()) << started->raw;
  const std::string exec_id = GetString(started->result(), "exec_id");
  ASSERT_FALSE(exec_id.empty()) << started->raw;

  ExecTrace trace = TraceExec(shim, exec_id, started);
  EXPECT_TRUE(trace.problems.empty()) << JoinProblems(trace);
  EXPECT_EQ(trace.stdout_data, "a\nb\n");
  EXPECT_EQ(trace.stderr_data, "err\n");
  EXPECT_EQ(trace.exit_count, 1u);
  ASSERT_NE(trace.exit, nullptr);
  const rapidjson::Value& exit = trace.exit->params();
  EXPECT_EQ(GetInt(exit, "exit_code", -999), 3) << trace.exit->raw;
  EXPECT_FALSE(GetBool(exit, "timed_out", true)) << trace.exit->raw;
  EXPECT_FALSE(GetBool(exit, "cancelled", true)) << trace.exit->raw;
  EXPECT_TRUE(IsNull(exit, "signal")) << trace.exit->raw;
  EXPECT_TRUE(IsNull(exit, "error")) << trace.exit->raw;
}

TEST_F(SliceTest, ExecRunEchoHi) {
  EppSession* shim = StartInitializedShim();
  ASSERT_NE(shim, nullptr);
  const std::string sandbox = CreateSandbox(shim);
  ASSERT_FALSE(sandbox.empty());

  MessagePtr response = Run(shim, sandbox, JsonObject().Str("command", "echo hi"));
  ASSERT_NE(response, nullptr) << "no answer to exec.run echo hi";
  ASSERT_FALSE(response->IsError()) << response->raw;
  rapidjson::Document expected;
  expected.Parse(R"({"exit_code":0,"stdout":"hi\n","stderr":"","timed_out":false})");
  EXPECT_TRUE(response->result() == expected)
      << "want " << ToJson(expected) << "\ngot  " << ToJson(response->result());
  // exec.run sends no notifications.
  EXPECT_TRUE(shim->NotificationsByMethod("exec.output").empty());
  EXPECT_TRUE(shim->NotificationsByMethod("exec.exit").empty());
}

TEST_F(SliceTest, ExecRunArgvReachesTheProgramUnchanged) {
  EppSession* shim = StartInitializedShim();
  ASSERT_NE(shim, nullptr);
  const std::string sandbox = CreateSandbox(shim);
  ASSERT_FALSE(sandbox.empty());

  MessagePtr response =
      Run(shim, sandbox, JsonObject().Raw("argv", R"(["printf","%s|","a b","$HOME","it's"])"));
  ASSERT_NE(response, nullptr) << "no answer to exec.run argv";
  ASSERT_FALSE(response->IsError()) << response->raw;
  EXPECT_EQ(GetInt(response->result(), "exit_code", -999), 0) << response->raw;
  // Upstream execd reports lines without their terminators, so the provider gives the
  // last line its "\n" back (docs/epp1.md §3, exec.output): "a b|$HOME|it's|" arrives with
  // one appended. Everything before it must be byte for byte what printf printed.
  EXPECT_EQ(GetString(response->result(), "stdout"), "a b|$HOME|it's|\n") << response->raw;
  EXPECT_EQ(GetString(response->result(), "stderr"), "") << response->raw;
}

TEST_F(SliceTest, ExecRunArgvSurvivesShellMetacharacters) {
  EppSession* shim = StartInitializedShim();
  ASSERT_NE(shim, nullptr);
  const std::string sandbox = CreateSandbox(shim);
  ASSERT_FALSE(sandbox.empty());

  const std::vector<std::string> words = {"",      "a\"b", "back\\slash", "`id`", "$(id)",
                                          "x;y&z", "*",    "ü €",         "tab\there",
                                          "'",     "''",   "--",          "-n",   "a\\'b"};
  std::string argv = R"(["printf","[%s]\n")";
  std::string expected;
  for (const std::string& word : words) {
    argv += "," + JsonQuote(word);
    expected += "[" + word + "]\n";
  }
  argv += "]";
  MessagePtr response = Run(shim, sandbox, JsonObject().Raw("argv", argv));
  ASSERT_NE(response, nullptr) << "no answer to exec.run argv " << argv;
  ASSERT_FALSE(response->IsError()) << response->raw;
  EXPECT_EQ(GetInt(response->result(), "exit_code", -999), 0) << response->raw;
  EXPECT_EQ(GetString(response->result(), "stdout"), expected) << "argv " << argv;
}

// docs/epp1.md §3, exec.output: each execd line gets its "\n" back; "\r\n" and a lone "\r"
// arrive as "\n"; execd >= 1.0.17 keeps blank lines.
TEST_F(SliceTest, ExecOutputLineEndingsOnExecd1019) {
  REQUIRE_FAKE("an execd of a chosen version (--execd-version)");
  ASSERT_TRUE(RestartFake({"--execd-version", "1.0.19"}));
  EppSession* shim = StartInitializedShim();
  ASSERT_NE(shim, nullptr);
  const std::string sandbox = CreateSandbox(shim);
  ASSERT_FALSE(sandbox.empty());
  MessagePtr response =
      Run(shim, sandbox, JsonObject().Str("command", R"(printf 'a\n\nb\r\nc\rd')"));
  ASSERT_NE(response, nullptr);
  ASSERT_FALSE(response->IsError()) << response->raw;
  EXPECT_EQ(GetString(response->result(), "stdout"), "a\n\nb\nc\nd\n") << response->raw;
}

// execd <= 1.0.16 drops blank lines; the rest is as on 1.0.19.
TEST_F(SliceTest, ExecOutputLineEndingsOnExecd1016) {
  REQUIRE_FAKE("an execd of a chosen version (--execd-version)");
  REQUIRE_FAKE_EXECD("the 1.0.16 profile; the real tier runs its own release");
  ASSERT_TRUE(RestartFake({"--execd-version", "1.0.16"}));
  EppSession* shim = StartInitializedShim();
  ASSERT_NE(shim, nullptr);
  const std::string sandbox = CreateSandbox(shim);
  ASSERT_FALSE(sandbox.empty());
  MessagePtr response =
      Run(shim, sandbox, JsonObject().Str("command", R"(printf 'a\n\nb\r\nc\rd')"));
  ASSERT_NE(response, nullptr);
  ASSERT_FALSE(response->IsError()) << response->raw;
  EXPECT_EQ(GetString(response->result(), "stdout"), "a\nb\nc\nd\n") << response->raw;
}

TEST_F(SliceTest, PipelinedRequestsAreEachAnsweredOnce) {
  EppSession* shim = StartInitializedShim();
  ASSERT_NE(shim, nullptr);
  const std::string sandbox = CreateSandbox(shim);
  ASSERT_FALSE(sandbox.empty());

  constexpr int kCount = 20;
  std::vector<int64_t> ids;
  for (int i = 0; i < kCount; ++i) {
    ids.push_back(shim->SendRequest(
        "exec.run", JsonObject()
                        .Str("sandbox_id", sandbox)
                        .Str("command", "echo pipelined-" + std::to_string(i))
                        .str()));
  }
  for (int i = 0; i < kCount; ++i) {
    MessagePtr response = shim->WaitResponse(ids[i], Millis(30000));
    ASSERT_NE(response, nullptr) << "request " << i << " (id " << ids[i] << ") unanswered";
    EXPECT_FALSE(response->IsError()) << response->raw;
    EXPECT_EQ(GetString(response->result(), "stdout"),
              "pipelined-" + std::to_string(i) + "\n")
        << "id " << ids[i] << ": " << response->raw;
  }
  std::this_thread::sleep_for(Millis(300));
  for (int i = 0; i < kCount; ++i) {
    EXPECT_EQ(shim->ResponsesFor(ids[i]).size(), 1u) << "id " << ids[i];
  }
}

}  // namespace
}  // namespace abx::e2e
