// Nothing waits forever and nothing is left behind:
//   - every upstream request has a deadline (request_timeout), whether the server
//     accepts and never answers (`silent`) or answers too late (`latency_ms`);
//   - a stream cut half-way ends in exactly one exec.exit without a made-up code, soon;
//   - a sandbox.create that fails at any step (execd never answers, $/cancel during the
//     POST or during the wait, the shim killed) leaves no sandbox on the server; the one
//     exception, a create whose answer comes after the deadline, leaves at most that one
//     sandbox, which expires by itself.
// (never_running + ready_timeout, and a stream cut in a short command, are in
// faults_test.)

#include <signal.h>
#include <time.h>

#include <ctime>

#include <string>
#include <thread>

#include <gtest/gtest.h>

#include "tests/e2e/harness.h"

namespace abx::e2e {
namespace {

constexpr int kRequestTimeoutS = 2;

// Seconds since the epoch of "YYYY-MM-DDTHH:MM:SS[.fff]Z"; 0 when it is not that.
int64_t Rfc3339Seconds(const std::string& text) {
  std::tm tm{};
  const char* end = ::strptime(text.c_str(), "%Y-%m-%dT%H:%M:%S", &tm);
  if (end == nullptr) return 0;
  return static_cast<int64_t>(::timegm(&tm));
}

int64_t MillisSince(Clock::time_point start) {
  return std::chrono::duration_cast<Millis>(Clock::now() - start).count();
}

class DeadlineTest : public TestEnv {
 protected:
  void SetUp() override {
    REQUIRE_FAKE("fault switches (/_fake/faults) and live sandbox counts (/_fake/stats)");
    TestEnv::SetUp();
  }

  // Polls the fake until live_sandboxes is `want` or `timeout` passes; the last value.
  int64_t WaitLiveSandboxes(int64_t want, Millis timeout = Millis(5000)) {
    int64_t live = -1;
    const auto deadline = Clock::now() + timeout;
    do {
      auto stats = fake().Stats();
      if (stats) live = stats->live_sandboxes;
      if (live == want) break;
      std::this_thread::sleep_for(Millis(50));
    } while (Clock::now() < deadline);
    return live;
  }

  // Waits until the fake has counted more lifecycle requests than `before`.
  bool WaitLifecycleRequestsAbove(int64_t before, Millis timeout = Millis(10000)) {
    const auto deadline = Clock::now() + timeout;
    while (Clock::now() < deadline) {
      auto stats = fake().Stats();
      if (stats && stats->requests > before) return true;
      std::this_thread::sleep_for(Millis(2));
    }
    return false;
  }

  int64_t LifecycleRequests() {
    auto stats = fake().Stats();
    return stats ? stats->requests : -1;
  }

  // A shim whose upstream requests each have a kRequestTimeoutS deadline.
  EppSession* ShortDeadlineShim() {
    return StartInitializedShim(
        {{"ABX_OPENSANDBOX_REQUEST_TIMEOUT", std::to_string(kRequestTimeoutS)}});
  }

  // Runs `method` under `fault_json` and checks it ends in E8006 near the deadline.
  void ExpectDeadline(EppSession* shim, const std::string& method, const std::string& params,
                      const std::string& fault_json) {
    std::string error;
    ASSERT_TRUE(fake().SetFaults(fault_json, &error)) << error;
    const auto start = Clock::now();
    MessagePtr response = shim->Request(method, params, Millis(15000));
    const int64_t took = MillisSince(start);
    ASSERT_TRUE(fake().ClearFaults(&error)) << error;
    ASSERT_NE(response, nullptr) << method << " under " << fault_json
                                 << ": no answer within 15 s";
    ASSERT_TRUE(response->IsError()) << response->raw;
    EXPECT_EQ(response->EppCode(), "E8006") << response->raw;
    EXPECT_EQ(response->ErrorCode(), -32005) << response->raw;
    // One attempt with a 2 s deadline (a timeout is not retried: a retry would not
    // be any faster, and the caller's own deadline matters more).
    EXPECT_GE(took, kRequestTimeoutS * 1000 - 200) << method << " gave up before its deadline";
    EXPECT_LE(took, kRequestTimeoutS * 1000 + 2500) << method << " overran its deadline";
  }
};

// --- Deadlines ---

TEST_F(DeadlineTest, SilentServerSandboxGetIsE8006AtTheDeadline) {
  EppSession* shim = ShortDeadlineShim();
  ASSERT_NE(shim, nullptr);
  const std::string sandbox = CreateSandbox(shim);
  ASSERT_FALSE(sandbox.empty());
  const std::string params = JsonObject().Str("sandbox_id", sandbox).str();
  ExpectDeadline(shim, "sandbox.get", params, R"({"silent":true})");
  // The session is fine once the server answers again.
  MessagePtr again = shim->Request("sandbox.get", params);
  ASSERT_NE(again, nullptr);
  EXPECT_FALSE(again->IsError()) << again->raw;
}

TEST_F(DeadlineTest, SilentServerSandboxListIsE8006AtTheDeadline) {
  EppSession* shim = ShortDeadlineShim();
  ASSERT_NE(shim, nullptr);
  ExpectDeadline(shim, "sandbox.list", "{}", R"({"silent":true})");
}

TEST_F(DeadlineTest, SlowServerSandboxGetIsE8006AtTheDeadline) {
  EppSession* shim = ShortDeadlineShim();
  ASSERT_NE(shim, nullptr);
  const std::string sandbox = CreateSandbox(shim);
  ASSERT_FALSE(sandbox.empty());
  ExpectDeadline(shim, "sandbox.get", JsonObject().Str("sandbox_id", sandbox).str(),
                 R"({"latency_ms":6000})");
}

TEST_F(DeadlineTest, SlowExecdFilesStatIsE8006AtTheDeadline) {
  REQUIRE_FAKE_EXECD("latency_ms on execd's answers");
  EppSession* shim = ShortDeadlineShim();
  ASSERT_NE(shim, nullptr);
  const std::string sandbox = CreateSandbox(shim);
  ASSERT_FALSE(sandbox.empty());
  ExpectDeadline(shim, "files.stat", JsonObject().Str("sandbox_id", sandbox).Str("path", "/tmp").str(),
                 R"({"latency_ms":6000})");
}

// --- Streams cut half-way ---

class CutStreamTest : public DeadlineTest {
 protected:
  void SetUp() override {
    DeadlineTest::SetUp();
    if (HasFatalFailure() || IsSkipped()) return;
    REQUIRE_FAKE_EXECD("reset_stream_after_events cuts the fake's execd streams");
    ASSERT_TRUE(StartShimWithSandbox(&shim_, &sandbox_));
  }

  // exec.start of `command` with the stream cut after `events` events; checks that one
  // exec.exit came within `bound`, with no code and an error, and returns the trace.
  ExecTrace StartCut(const std::string& command, int events, Millis bound) {
    std::string error;
    EXPECT_TRUE(fake().SetFaults(
        JsonObject().Int("reset_stream_after_events", events).str(), &error))
        << error;
    const auto start = Clock::now();
    const int64_t id = shim_->SendRequest(
        "exec.start", JsonObject().Str("sandbox_id", sandbox_).Str("command", command).str());
    MessagePtr started = shim_->WaitResponse(id);
    if (!started || started->IsError()) {
      ADD_FAILURE() << "exec.start: " << (started ? started->raw : std::string("no answer"));
      return {};
    }
    const std::string exec_id = GetString(started->result(), "exec_id");
    ExecTrace trace = TraceExec(shim_, exec_id, started, bound, Millis(500));
    const int64_t took = MillisSince(start);
    EXPECT_TRUE(fake().ClearFaults(&error)) << error;
    EXPECT_TRUE(trace.problems.empty()) << JoinProblems(trace);
    EXPECT_EQ(trace.exit_count, 1u);
    if (!trace.exit) {
      ADD_FAILURE() << "no exec.exit within " << bound.count() << " ms of a cut stream";
      return trace;
    }
    EXPECT_LT(took, bound.count());
    const rapidjson::Value& exit = trace.exit->params();
    EXPECT_TRUE(IsNull(exit, "exit_code")) << "a code was made up: " << trace.exit->raw;
    const rapidjson::Value* why = Find(exit, "error");
    EXPECT_TRUE(why && why->IsObject() && !GetString(*why, "message").empty())
        << trace.exit->raw;
    EXPECT_FALSE(GetBool(exit, "cancelled", true)) << trace.exit->raw;
    EXPECT_FALSE(GetBool(exit, "timed_out", true)) << trace.exit->raw;
    return trace;
  }

  EppSession* shim_ = nullptr;
  std::string sandbox_;
};

TEST_F(CutStreamTest, CutRightAfterInitEndsWithOneNullExit) {
  ExecTrace trace = StartCut("sleep 1; echo late; exit 3", 1, Millis(8000));
  EXPECT_EQ(trace.stdout_data, "") << "output was made up";
}

TEST_F(CutStreamTest, CutInALargeOutputKeepsAnExactPrefix) {
  // 200000 lines; the stream is cut after 100 events. What arrived must be the start of
  // the real output, line for line: nothing invented, nothing repeated, nothing skipped.
  ExecTrace trace = StartCut("seq 1 200000; exit 4", 100, Millis(10000));
  std::string expected;
  for (int i = 1; i <= 200000 && expected.size() <= trace.stdout_data.size(); ++i) {
    expected += std::to_string(i) + "\n";
  }
  ASSERT_LE(trace.stdout_data.size(), expected.size());
  EXPECT_EQ(trace.stdout_data, expected.substr(0, trace.stdout_data.size()));
  EXPECT_TRUE(trace.stdout_data.empty() || trace.stdout_data.back() == '\n')
      << "a line was cut: " << Abbreviate(trace.stdout_data, 200);
  EXPECT_LT(trace.stdout_data.size(), expected.size()) << "the cut did not happen";
}

TEST_F(CutStreamTest, ExecRunThroughACutStreamIsAnErrorNotACode) {
  std::string error;
  ASSERT_TRUE(fake().SetFaults(R"({"reset_stream_after_events":3})", &error)) << error;
  const auto start = Clock::now();
  MessagePtr response = shim_->Request(
      "exec.run",
      JsonObject().Str("sandbox_id", sandbox_).Str("command", "for i in 1 2 3 4 5 6; do echo $i; sleep 0.1; done; exit 5").str(),
      Millis(10000));
  const int64_t took = MillisSince(start);
  ASSERT_TRUE(fake().ClearFaults(&error)) << error;
  ASSERT_NE(response, nullptr) << "exec.run through a cut stream: no answer within 10 s";
  EXPECT_LT(took, 10000);
  ASSERT_EQ(shim_->ResponsesFor(GetInt(response->json, "id")).size(), 1u);
  if (response->IsError()) {
    EXPECT_EQ(response->EppCode(), "E8002") << response->raw;
  } else {
    EXPECT_TRUE(IsNull(response->result(), "exit_code")) << "a code was made up: " << response->raw;
  }
}

// --- A failed create leaves nothing behind ---

TEST_F(DeadlineTest, ExecdDownWhileRunningCreateIsE8006AndTheSandboxIsKilled) {
  REQUIRE_FAKE_EXECD("the execd_down fault switch");
  EppSession* shim = StartInitializedShim();
  ASSERT_NE(shim, nullptr);
  std::string error;
  ASSERT_TRUE(fake().SetFaults(R"({"execd_down":true})", &error)) << error;
  const auto start = Clock::now();
  MessagePtr response = shim->Request(
      "sandbox.create", R"({"template":"base","provider_options":{"ready_timeout":2}})",
      Millis(20000));
  const int64_t took = MillisSince(start);
  ASSERT_NE(response, nullptr) << "no answer to sandbox.create within 20 s";
  ASSERT_TRUE(response->IsError()) << response->raw;
  EXPECT_EQ(response->EppCode(), "E8006") << response->raw;
  EXPECT_GE(took, 1500);
  EXPECT_LE(took, 8000);
  EXPECT_EQ(WaitLiveSandboxes(0), 0) << "the sandbox whose execd never answered was left";
  ASSERT_TRUE(fake().ClearFaults(&error)) << error;
}

TEST_F(DeadlineTest, CancelDuringTheCreatePostKillsTheSandboxItMade) {
  EppSession* shim = StartInitializedShim();
  ASSERT_NE(shim, nullptr);
  const int64_t before = LifecycleRequests();
  std::string error;
  ASSERT_TRUE(fake().SetFaults(R"({"latency_ms":1500})", &error)) << error;
  const int64_t id = shim->SendRequest("sandbox.create", R"({"template":"base"})");
  ASSERT_TRUE(WaitLifecycleRequestsAbove(before)) << "the create never reached the fake";
  ASSERT_TRUE(fake().ClearFaults(&error)) << error;  // the POST itself stays slow
  ASSERT_TRUE(shim->Notify("$/cancel", JsonObject().Int("id", id).str()));
  MessagePtr response = shim->WaitResponse(id, Millis(15000));
  ASSERT_NE(response, nullptr) << "no answer to the cancelled sandbox.create";
  ASSERT_TRUE(response->IsError()) << response->raw;
  EXPECT_EQ(response->EppCode(), "E8009") << response->raw;
  EXPECT_EQ(WaitLiveSandboxes(0), 0) << "the sandbox made by the cancelled POST was left";
}

TEST_F(DeadlineTest, CancelWhileWaitingForRunningKillsTheSandbox) {
  EppSession* shim = StartInitializedShim();
  ASSERT_NE(shim, nullptr);
  std::string error;
  ASSERT_TRUE(fake().SetFaults(R"({"never_running":true})", &error)) << error;
  const int64_t id = shim->SendRequest(
      "sandbox.create", R"({"template":"base","provider_options":{"ready_timeout":60}})");
  ASSERT_EQ(WaitLiveSandboxes(1, Millis(10000)), 1) << "the create made no sandbox";
  std::this_thread::sleep_for(Millis(300));  // well into the wait for Running
  ASSERT_TRUE(shim->ResponsesFor(id).empty()) << "create answered while never Running";
  const auto sent = Clock::now();
  ASSERT_TRUE(shim->Notify("$/cancel", JsonObject().Int("id", id).str()));
  MessagePtr response = shim->WaitResponse(id, Millis(10000));
  ASSERT_NE(response, nullptr) << "no answer to the cancelled sandbox.create";
  EXPECT_LT(MillisSince(sent), 3000) << "the cancel was not prompt";
  EXPECT_EQ(response->EppCode(), "E8009") << response->raw;
  EXPECT_EQ(WaitLiveSandboxes(0), 0) << "the cancelled create left its sandbox";
}

TEST_F(DeadlineTest, ShimKilledWhileWaitingForRunningLeavesNoSandbox) {
  EppSession* shim = StartInitializedShim();
  ASSERT_NE(shim, nullptr);
  std::string error;
  ASSERT_TRUE(fake().SetFaults(R"({"never_running":true})", &error)) << error;
  shim->SendRequest("sandbox.create",
                    R"({"template":"base","provider_options":{"ready_timeout":60}})");
  ASSERT_EQ(WaitLiveSandboxes(1, Millis(10000)), 1) << "the create made no sandbox";
  std::this_thread::sleep_for(Millis(300));
  ASSERT_EQ(::kill(shim->pid(), SIGKILL), 0);
  ASSERT_TRUE(shim->WaitExit(Millis(5000)).has_value());
  EXPECT_EQ(WaitLiveSandboxes(0, Millis(8000)), 0)
      << "the create of a shim killed with SIGKILL left its sandbox";
  // The bridge itself lives on and serves the next session.
  EppSession* next = StartInitializedShim();
  ASSERT_NE(next, nullptr);
  MessagePtr listed = next->Request("sandbox.list", "{}");
  ASSERT_NE(listed, nullptr);
  EXPECT_FALSE(listed->IsError()) << listed->raw;
}

TEST_F(DeadlineTest, ShimKilledDuringTheCreatePostLeavesNoSandbox) {
  EppSession* shim = StartInitializedShim();
  ASSERT_NE(shim, nullptr);
  const int64_t before = LifecycleRequests();
  std::string error;
  ASSERT_TRUE(fake().SetFaults(R"({"latency_ms":1500})", &error)) << error;
  shim->SendRequest("sandbox.create", R"({"template":"base"})");
  ASSERT_TRUE(WaitLifecycleRequestsAbove(before)) << "the create never reached the fake";
  ASSERT_TRUE(fake().ClearFaults(&error)) << error;
  ASSERT_EQ(::kill(shim->pid(), SIGKILL), 0);
  ASSERT_TRUE(shim->WaitExit(Millis(5000)).has_value());
  // The POST completes on the server 1.5 s after it arrived; the bridge must then kill
  // what it made although nobody is left to answer.
  std::this_thread::sleep_for(Millis(1500));
  EXPECT_EQ(WaitLiveSandboxes(0, Millis(8000)), 0)
      << "the create of a shim killed during the POST left its sandbox";
}

TEST_F(DeadlineTest, ShimKilledWhileExecdIsDownLeavesNoSandbox) {
  REQUIRE_FAKE_EXECD("the execd_down fault switch");
  EppSession* shim = StartInitializedShim();
  ASSERT_NE(shim, nullptr);
  std::string error;
  ASSERT_TRUE(fake().SetFaults(R"({"execd_down":true})", &error)) << error;
  shim->SendRequest("sandbox.create",
                    R"({"template":"base","provider_options":{"ready_timeout":60}})");
  ASSERT_EQ(WaitLiveSandboxes(1, Millis(10000)), 1) << "the create made no sandbox";
  std::this_thread::sleep_for(Millis(500));
  ASSERT_EQ(::kill(shim->pid(), SIGKILL), 0);
  ASSERT_TRUE(shim->WaitExit(Millis(5000)).has_value());
  EXPECT_EQ(WaitLiveSandboxes(0, Millis(8000)), 0)
      << "the create of a shim killed with SIGKILL left its sandbox";
  ASSERT_TRUE(fake().ClearFaults(&error)) << error;
}

// A create whose answer comes after the request deadline: the server makes the sandbox
// after the bridge stopped waiting, and the bridge never learns its id. This is the one
// create failure that can leave a sandbox behind (see docs/RELIABILITY.md); what bounds
// it is the lifetime every create asks for (default_timeout), so the sandbox expires by
// itself. The test holds that bound, and holds that at most this one sandbox is left.
TEST_F(DeadlineTest, CreateWhoseAnswerIsTooLateLeavesAtMostOneSandboxThatExpires) {
  EppSession* shim = ShortDeadlineShim();
  ASSERT_NE(shim, nullptr);
  std::string error;
  ASSERT_TRUE(fake().SetFaults(R"({"latency_ms":3000})", &error)) << error;
  MessagePtr response = shim->Request("sandbox.create", R"({"template":"base"})", Millis(15000));
  ASSERT_TRUE(fake().ClearFaults(&error)) << error;
  ASSERT_NE(response, nullptr);
  ASSERT_TRUE(response->IsError()) << response->raw;
  EXPECT_EQ(response->EppCode(), "E8006") << response->raw;
  std::this_thread::sleep_for(Millis(2500));  // the server finishes the create meanwhile
  auto stats = fake().Stats();
  ASSERT_TRUE(stats.has_value());
  EXPECT_LE(stats->live_sandboxes, 1) << "the create was sent more than once";
  MessagePtr listed = shim->Request("sandbox.list", "{}");
  ASSERT_NE(listed, nullptr);
  ASSERT_FALSE(listed->IsError()) << listed->raw;
  const rapidjson::Value* sandboxes = Find(listed->result(), "sandboxes");
  ASSERT_TRUE(sandboxes && sandboxes->IsArray()) << listed->raw;
  for (const rapidjson::Value& sandbox : sandboxes->GetArray()) {
    const int64_t created = Rfc3339Seconds(GetString(sandbox, "created_at"));
    const int64_t expires = Rfc3339Seconds(GetString(sandbox, "expires_at"));
    ASSERT_GT(created, 0) << ToJson(sandbox);
    ASSERT_GT(expires, 0) << "a sandbox left by a lost create never expires: " << ToJson(sandbox);
    EXPECT_LE(expires - created, 600 + 5) << "not the default 600 s lifetime: " << ToJson(sandbox);
  }
}

}  // namespace
}  // namespace abx::e2e
