// Ending commands early (docs/epp1.md §1, §2, §3): `$/cancel` of exec.run and exec.start,
// command timeouts, and end of stdin with a command still attached.

#include <unistd.h>

#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "tests/e2e/harness.h"

namespace abx::e2e {
namespace {

class CancelTest : public TestEnv {
 protected:
  void SetUp() override {
    TestEnv::SetUp();
    if (HasFatalFailure()) return;
    ASSERT_TRUE(StartShimWithSandbox(&shim_, &sandbox_));
  }

  // Starts `command` attached; its request id and exec_id (empty with a failure).
  std::pair<int64_t, std::string> Start(const std::string& command,
                                        JsonObject extra = JsonObject()) {
    const int64_t id = shim_->SendRequest(
        "exec.start", extra.Str("sandbox_id", sandbox_).Str("command", command).str());
    MessagePtr response = shim_->WaitResponse(id);
    if (!response || response->IsError()) {
      ADD_FAILURE() << "exec.start " << command << ": "
                    << (response ? response->raw : std::string("no answer"));
      return {id, ""};
    }
    started_ = response;
    return {id, GetString(response->result(), "exec_id")};
  }

  // "sleep 3N.<digits unique to this process>": the fake runs every sandbox's commands
  // on this host, so a listing also shows other tests' commands; this one is ours alone.
  static std::string UniqueSleep(int seconds) {
    return "sleep " + std::to_string(seconds) + "." + std::to_string(::getpid()) + "1";
  }

  struct ListedProcess {
    std::string exec_id;
    int64_t pid = 0;
    std::string json;
  };
  // The sandbox's processes whose command holds `command`, as `shim` lists them; a
  // failed listing fails the test. process.list walks /proc in the sandbox, and the
  // fake's "sandbox" is this whole host, so the listing is long and slow here: 30 s.
  std::vector<ListedProcess> ProcessesRunning(EppSession* shim, const std::string& command) {
    std::vector<ListedProcess> found;
    MessagePtr listed =
        shim->Request("process.list", JsonObject().Str("sandbox_id", sandbox_).str(), Millis(30000));
    if (!listed || listed->IsError()) {
      ADD_FAILURE() << "process.list: " << (listed ? listed->raw : "no answer within 30 s");
      return found;
    }
    const rapidjson::Value* processes = Find(listed->result(), "processes");
    if (!processes || !processes->IsArray()) {
      ADD_FAILURE() << "no processes: " << Abbreviate(listed->raw, 2000);
      return found;
    }
    for (const rapidjson::Value& process : processes->GetArray()) {
      if (GetString(process, "command").find(command) == std::string::npos) continue;
      found.push_back({GetString(process, "exec_id"), GetInt(process, "pid", 0), ToJson(process)});
    }
    return found;
  }

  // After this test's shim has gone: `command` is soon not among the sandbox's processes,
  // as another shim lists them. The cancel reaches execd from the bridge's background
  // after the shim has gone, so the listing is asked again until it holds (20 s).
  void ExpectNotListed(const std::string& command) {
    EppSession* other = StartInitializedShim();
    ASSERT_NE(other, nullptr);
    MessagePtr connected =
        other->Request("sandbox.connect", JsonObject().Str("sandbox_id", sandbox_).str());
    ASSERT_NE(connected, nullptr);
    ASSERT_FALSE(connected->IsError()) << connected->raw;
    std::vector<ListedProcess> outlived = ProcessesRunning(other, command);
    const auto deadline = std::chrono::steady_clock::now() + Millis(20000);
    while (!outlived.empty() && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(Millis(200));
      outlived = ProcessesRunning(other, command);
    }
    EXPECT_TRUE(outlived.empty()) << "the attached command outlived its session: " << outlived.front().json;
  }

  EppSession* shim_ = nullptr;
  std::string sandbox_;
  MessagePtr started_;
};

TEST_F(CancelTest, CancelledExecRunAnswersE8009) {
  const int64_t id = shim_->SendRequest(
      "exec.run", JsonObject().Str("sandbox_id", sandbox_).Str("command", "sleep 30").str());
  std::this_thread::sleep_for(Millis(500));
  ASSERT_TRUE(shim_->ResponsesFor(id).empty()) << "exec.run of sleep 30 answered at once";
  const auto sent = Clock::now();
  ASSERT_TRUE(shim_->Notify("$/cancel", JsonObject().Int("id", id).str()));
  MessagePtr response = shim_->WaitResponse(id, Millis(5000));
  ASSERT_NE(response, nullptr) << "no answer to the cancelled exec.run within 5 s";
  EXPECT_EQ(response->ErrorCode(), -32008) << response->raw;
  EXPECT_EQ(response->EppCode(), "E8009") << response->raw;
  EXPECT_LT(std::chrono::duration_cast<Millis>(Clock::now() - sent).count(), 5000);
}

TEST_F(CancelTest, CancelledExecStartEndsWithCancelledExit) {
  auto [id, exec_id] = Start("echo before; sleep 30; echo after");
  ASSERT_FALSE(exec_id.empty());
  ASSERT_NE(shim_->WaitNotification(exec_id, "exec.output", Millis(10000)), nullptr)
      << "no output from the command before the cancel";
  ASSERT_TRUE(shim_->Notify("$/cancel", JsonObject().Int("id", id).str()));
  ExecTrace trace = TraceExec(shim_, exec_id, started_, Millis(5000));
  EXPECT_TRUE(trace.problems.empty()) << JoinProblems(trace);
  ASSERT_NE(trace.exit, nullptr);
  const rapidjson::Value& exit = trace.exit->params();
  EXPECT_TRUE(GetBool(exit, "cancelled", false)) << trace.exit->raw;
  EXPECT_FALSE(GetBool(exit, "timed_out", true)) << trace.exit->raw;
  EXPECT_TRUE(IsNull(exit, "exit_code")) << "a cancelled command has no code of its own: "
                                         << trace.exit->raw;
  // execd ends a cancelled command with SIGTERM; EPP/1 knows only "SIGKILL" | null.
  EXPECT_EQ(GetString(exit, "signal"), "SIGKILL") << trace.exit->raw;
  EXPECT_EQ(trace.stdout_data, "before\n");
}

TEST_F(CancelTest, CancelOfUnknownIdDoesNothing) {
  ASSERT_TRUE(shim_->Notify("$/cancel", R"({"id":987654})"));
  MessagePtr next = shim_->Request("sandbox.get", JsonObject().Str("sandbox_id", sandbox_).str());
  ASSERT_NE(next, nullptr) << "the session stopped answering after $/cancel of an unknown id";
  EXPECT_FALSE(next->IsError()) << next->raw;
  EXPECT_TRUE(shim_->ResponsesFor(987654).empty()) << "a notification was answered";
}

TEST_F(CancelTest, CommandTimeoutEndsWithTimedOut) {
  auto [id, exec_id] = Start("sleep 30", JsonObject().Int("timeout", 1));
  ASSERT_FALSE(exec_id.empty());
  ExecTrace trace = TraceExec(shim_, exec_id, started_, Millis(8000));
  EXPECT_TRUE(trace.problems.empty()) << JoinProblems(trace);
  ASSERT_NE(trace.exit, nullptr);
  EXPECT_TRUE(GetBool(trace.exit->params(), "timed_out", false)) << trace.exit->raw;
  EXPECT_FALSE(GetBool(trace.exit->params(), "cancelled", true)) << trace.exit->raw;
  EXPECT_TRUE(IsNull(trace.exit->params(), "exit_code")) << trace.exit->raw;
  EXPECT_EQ(GetString(trace.exit->params(), "signal"), "SIGKILL") << trace.exit->raw;
}

// A command that a signal other than SIGKILL ends, without a cancel or a timeout: still
// "SIGKILL", the one value EPP/1 has for "ended by a signal".
TEST_F(CancelTest, CommandEndedBySigtermReportsSigkill) {
  auto [id, exec_id] = Start("echo up; kill -TERM $$; sleep 5");
  ASSERT_FALSE(exec_id.empty());
  ExecTrace trace = TraceExec(shim_, exec_id, started_, Millis(8000));
  EXPECT_TRUE(trace.problems.empty()) << JoinProblems(trace);
  ASSERT_NE(trace.exit, nullptr);
  const rapidjson::Value& exit = trace.exit->params();
  EXPECT_EQ(GetString(exit, "signal"), "SIGKILL") << trace.exit->raw;
  EXPECT_TRUE(IsNull(exit, "exit_code")) << trace.exit->raw;
  EXPECT_FALSE(GetBool(exit, "cancelled", true)) << trace.exit->raw;
  EXPECT_FALSE(GetBool(exit, "timed_out", true)) << trace.exit->raw;
  EXPECT_TRUE(IsNull(exit, "error")) << trace.exit->raw;
  EXPECT_EQ(trace.stdout_data, "up\n");
}

TEST_F(CancelTest, ExecRunTimeoutReportsTimedOut) {
  MessagePtr response = shim_->Request(
      "exec.run",
      JsonObject().Str("sandbox_id", sandbox_).Str("command", "sleep 30").Int("timeout", 1).str(),
      Millis(8000));
  ASSERT_NE(response, nullptr) << "exec.run with timeout 1 did not end within 8 s";
  ASSERT_FALSE(response->IsError()) << response->raw;
  EXPECT_TRUE(GetBool(response->result(), "timed_out", false)) << response->raw;
  EXPECT_TRUE(IsNull(response->result(), "exit_code")) << response->raw;
}

TEST_F(CancelTest, EndOfStdinWithAttachedCommandExitsZeroWithinTwoSeconds) {
  auto [id, exec_id] = Start("sleep 30");
  ASSERT_FALSE(exec_id.empty());
  shim_->CloseStdin();
  auto status = shim_->WaitExit(Millis(2000));
  ASSERT_TRUE(status.has_value()) << "the shim still runs 2 s after end of stdin";
  EXPECT_TRUE(status->exited && status->code == 0) << status->ToString();
}

// The control for the test below: a running attached command is listed, with its exec_id.
TEST_F(CancelTest, ProcessListShowsARunningCommand) {
  const std::string command = UniqueSleep(32);
  auto [id, exec_id] = Start(command);
  ASSERT_FALSE(exec_id.empty());
  // Listed once execd has started it: asked again until then (20 s).
  std::vector<ListedProcess> listed = ProcessesRunning(shim_, command);
  const auto deadline = std::chrono::steady_clock::now() + Millis(20000);
  while (listed.empty() && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(Millis(100));
    listed = ProcessesRunning(shim_, command);
  }
  ASSERT_FALSE(listed.empty()) << command << " is not listed";
  for (const ListedProcess& process : listed) {
    EXPECT_EQ(process.exec_id, exec_id) << process.json;
    EXPECT_GT(process.pid, 0) << process.json;
  }
}

TEST_F(CancelTest, EndOfStdinKillsTheAttachedCommand) {
  const std::string command = UniqueSleep(31);
  auto [id, exec_id] = Start(command);
  ASSERT_FALSE(exec_id.empty());
  shim_->CloseStdin();
  ASSERT_TRUE(shim_->WaitExit(Millis(2000)).has_value());
  ExpectNotListed(command);
}

// A host that writes its exec.run and closes stdin at once (a one-shot pipe) is gone
// before the bridge has started the command, which is cancelled all the same: answered
// E8009 by the bridge (not E8002 by a shim that gave up waiting), and not left running.
TEST_F(CancelTest, EndOfStdinRightBehindExecRunCancelsIt) {
  const std::string command = UniqueSleep(33);
  const int64_t id = shim_->SendRequest(
      "exec.run", JsonObject().Str("sandbox_id", sandbox_).Str("command", command).str());
  shim_->CloseStdin();
  auto status = shim_->WaitExit(Millis(2000));
  ASSERT_TRUE(status.has_value()) << "the shim still runs 2 s after end of stdin";
  EXPECT_TRUE(status->exited && status->code == 0) << status->ToString();
  MessagePtr answer = shim_->WaitResponse(id, Millis(1000));
  ASSERT_NE(answer, nullptr) << shim_->Transcript();
  EXPECT_EQ(answer->EppCode(), "E8009") << answer->raw;
  ExpectNotListed(command);
}

}  // namespace
}  // namespace abx::e2e
