// Ending requests early in EPP sessions driven in one process, without gRPC, over one
// real core::BridgeCore against the real fake OpenSandbox server process: sessions
// destroyed with requests in flight, `shutdown`, end of input, and $/cancel racing the
// end of its request. Checked exactly: one answer per request, cancelled commands gone
// from the host, no sandbox left. Under --config=tsan it is how ThreadSanitizer judges
// the bridge's request threads and cancellation (tools/sanitizers).

#include <algorithm>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "tests/bridge/api/epp/in_process_host.h"
#include "tests/bridge/api/epp/session_fixture.h"
#include "tests/e2e/json_util.h"
#include "tests/e2e/process.h"

namespace abx::epp::testing {
namespace {

using e2e::GetBool;
using e2e::GetInt;
using e2e::GetString;
using e2e::IsNull;
using e2e::JsonObject;

// A session destroyed (the host's stream gone) with a command streaming, a command
// collecting, and a create waiting for its sandbox: every one is cancelled and answered,
// the destructor returns promptly, the commands end at the fake, the half-made sandbox
// is killed. A second session whose host is already unreachable (writes fail) ends the
// same way.
TEST_F(SessionTest, DestroyedSessionCancelsAndAnswersEverythingInFlight) {
  std::string sandbox;
  std::unique_ptr<InProcessHost> host = HostWithSandbox(&sandbox);
  ASSERT_NE(host, nullptr);
  std::string other_sandbox;
  std::unique_ptr<InProcessHost> gone = HostWithSandbox(&other_sandbox, kKeyB);
  ASSERT_NE(gone, nullptr);
  // New sandboxes stay Pending from now on: a create waits until cancelled.
  ASSERT_TRUE(SetFaults(R"({"never_running":true})"));

  const std::string streaming_sleep = UniqueSleep(301);
  const std::string collecting_sleep = UniqueSleep(302);
  const std::string gone_sleep = UniqueSleep(303);
  auto on = [](const std::string& id) { return JsonObject().Str("sandbox_id", id); };

  const std::string start =
      host->Send("exec.start", on(sandbox).Str("command", "echo started; " + streaming_sleep).str());
  const std::string run = host->Send("exec.run", on(sandbox).Str("command", collecting_sleep).str());
  const std::string create = host->Send("sandbox.create", R"({"template":"base"})");
  const std::string gone_start =
      gone->Send("exec.start", on(other_sandbox).Str("command", "echo started; " + gone_sleep).str());

  MessagePtr started = host->sink().WaitResponse(start, kAnswerTimeout);
  const std::string exec_id = started ? GetString(started->result(), "exec_id") : "";
  ASSERT_FALSE(exec_id.empty()) << Describe(started);
  ASSERT_NE(host->sink().WaitNotification(exec_id, "exec.output", kAnswerTimeout), nullptr);
  MessagePtr gone_started = gone->sink().WaitResponse(gone_start, kAnswerTimeout);
  ASSERT_TRUE(gone_started && !GetString(gone_started->result(), "exec_id").empty())
      << Describe(gone_started);
  // The create has made its sandbox and waits for Running once it reports progress.
  const auto deadline = Clock::now() + kAnswerTimeout;
  auto progress_for_create = [&] {
    for (const MessagePtr& m : host->sink().NotificationsByMethod("$/progress")) {
      if (e2e::ToJson(m->params()["id"]) == create) return true;
    }
    return false;
  };
  while (!progress_for_create() && Clock::now() < deadline) std::this_thread::sleep_for(Millis(20));
  ASSERT_TRUE(progress_for_create()) << "the create never reported waiting";
  // Both commands run at the fake by now (the collecting one was sent before the create);
  // `sleep` may start a moment after the "started" its shell printed.
  while (e2e::FindProcesses({streaming_sleep}).empty() && Clock::now() < deadline) {
    std::this_thread::sleep_for(Millis(20));
  }
  ASSERT_FALSE(e2e::FindProcesses({streaming_sleep}).empty());

  gone->sink().Disconnect();
  std::thread end_gone([&] { EXPECT_LT(gone->DestroySession().count(), 15000); });
  const Millis took = host->DestroySession();
  end_gone.join();
  EXPECT_LT(took.count(), 15000) << "the destructor waited that long for its handlers";

  RecordingSink& sink = host->sink();
  ExecTrace trace = TraceExec(sink, exec_id, started, Millis(0), Millis(0));
  EXPECT_TRUE(trace.problems.empty()) << Join(trace.problems);
  ASSERT_NE(trace.exit, nullptr);
  EXPECT_TRUE(GetBool(trace.exit->params(), "cancelled")) << trace.exit->raw;
  EXPECT_EQ(trace.stdout_data, "started\n");
  MessagePtr ran = sink.WaitResponse(run, Millis(0));
  EXPECT_TRUE(ran && ran->EppCode() == "E8009") << Describe(ran);
  MessagePtr created = sink.WaitResponse(create, Millis(0));
  EXPECT_TRUE(created && created->EppCode() == "E8009") << Describe(created);
  EXPECT_EQ(Join(host->AnswerProblems()), "");
  EXPECT_EQ(Join(sink.Problems()), "");
  // The unreachable host's session wrote its exec.exit into the void, and nothing else
  // was lost or doubled on the way.
  EXPECT_GE(gone->sink().late_writes(), 1u);
  EXPECT_EQ(Join(gone->sink().Problems()), "");

  for (const std::string& command : {streaming_sleep, collecting_sleep, gone_sleep}) {
    EXPECT_TRUE(GoneWithin(command, Millis(15000))) << command << " still runs";
  }
  ASSERT_TRUE(ClearFaults());
  KillSandbox(sandbox);
  KillSandbox(other_sandbox);
  ExpectNoSandboxLeft();
}

// `shutdown` cancels what is in flight, waits for it, and only then answers: its answer
// is the session's last line. Requests after it are refused; `exit` ends the session.
TEST_F(SessionTest, ShutdownAnswersLastAfterEverythingInFlightEnded) {
  std::string sandbox;
  std::unique_ptr<InProcessHost> host = HostWithSandbox(&sandbox);
  ASSERT_NE(host, nullptr);
  const std::string sleeping = UniqueSleep(304);
  auto on = JsonObject().Str("sandbox_id", sandbox);
  const std::string start =
      host->Send("exec.start", JsonObject(on).Str("command", "echo up; " + sleeping).str());
  const std::string run = host->Send("exec.run", JsonObject(on).Str("command", sleeping).str());
  const std::string list = host->Send("sandbox.list", "{}");
  MessagePtr started = host->sink().WaitResponse(start, kAnswerTimeout);
  const std::string exec_id = started ? GetString(started->result(), "exec_id") : "";
  ASSERT_FALSE(exec_id.empty()) << Describe(started);
  ASSERT_NE(host->sink().WaitNotification(exec_id, "exec.output", kAnswerTimeout), nullptr);

  const std::string shutdown = host->Send("shutdown", "{}");
  MessagePtr shut = host->sink().WaitResponse(shutdown, kAnswerTimeout);
  ASSERT_TRUE(shut && shut->result().IsNull()) << Describe(shut);
  const std::vector<MessagePtr> all = host->sink().All();
  EXPECT_EQ(all.back()->index, shut->index) << "a line after the shutdown answer: " << all.back()->raw;
  MessagePtr ran = host->sink().WaitResponse(run, Millis(0));
  EXPECT_TRUE(ran && ran->EppCode() == "E8009") << Describe(ran);
  MessagePtr exit = host->sink().WaitNotification(exec_id, "exec.exit", Millis(0));
  EXPECT_TRUE(exit && GetBool(exit->params(), "cancelled")) << Describe(exit);
  EXPECT_NE(host->sink().WaitResponse(list, Millis(0)), nullptr);

  MessagePtr refused = host->Call("exec.run", JsonObject(on).Str("command", "true").str(), kAnswerTimeout);
  EXPECT_TRUE(refused && refused->ErrorCode() == -32000) << Describe(refused);
  host->Notify("exit", "{}");
  EXPECT_TRUE(host->session()->exit_requested());
  EXPECT_LT(host->DestroySession().count(), 5000);
  EXPECT_EQ(Join(host->AnswerProblems()), "");
  EXPECT_EQ(Join(host->sink().Problems()), "");
  EXPECT_TRUE(GoneWithin(sleeping, Millis(15000)));
  KillSandbox(sandbox);
  ExpectNoSandboxLeft();
}

// End of stdin cancels the commands the host is attached to and nothing else: a
// detached command, a file write and a listing still finish and are answered.
TEST_F(SessionTest, EndOfInputCancelsOnlyAttachedCommands) {
  std::string sandbox;
  std::unique_ptr<InProcessHost> host = HostWithSandbox(&sandbox);
  ASSERT_NE(host, nullptr);
  const std::string attached_sleep = UniqueSleep(305);
  auto on = JsonObject().Str("sandbox_id", sandbox);
  const std::string attached =
      host->Send("exec.start", JsonObject(on).Str("command", "echo a; " + attached_sleep).str());
  const std::string collecting = host->Send("exec.run", JsonObject(on).Str("command", attached_sleep).str());
  const std::string detached = host->Send(
      "exec.start", JsonObject(on).Str("command", "sleep 1; echo detached-done").Bool("detached", true).str());
  const std::string payload(200 * 1024, 'x');
  const std::string write =
      host->Send("files.write", JsonObject(on).Str("path", "/eoi.txt").Str("data", payload).str());
  MessagePtr started = host->sink().WaitResponse(attached, kAnswerTimeout);
  const std::string exec_id = started ? GetString(started->result(), "exec_id") : "";
  ASSERT_FALSE(exec_id.empty()) << Describe(started);
  ASSERT_NE(host->sink().WaitNotification(exec_id, "exec.output", kAnswerTimeout), nullptr);

  host->EndOfInput();
  ExecTrace trace = TraceExec(host->sink(), exec_id, started, kAnswerTimeout);
  ASSERT_NE(trace.exit, nullptr) << Join(trace.problems);
  EXPECT_TRUE(GetBool(trace.exit->params(), "cancelled")) << trace.exit->raw;
  MessagePtr ran = host->sink().WaitResponse(collecting, kAnswerTimeout);
  EXPECT_TRUE(ran && ran->EppCode() == "E8009") << Describe(ran);
  MessagePtr background = host->sink().WaitResponse(detached, kAnswerTimeout);
  const std::string background_id = background ? GetString(background->result(), "exec_id") : "";
  EXPECT_FALSE(background_id.empty()) << Describe(background);
  MessagePtr written = host->sink().WaitResponse(write, kAnswerTimeout);
  EXPECT_TRUE(written && GetInt(written->result(), "size") == static_cast<int64_t>(payload.size()))
      << Describe(written);
  // The host still reads answers after its stdin ended (docs/epp1.md §1): the detached
  // command's output is there to be read back.
  std::string logs;
  for (const auto until = Clock::now() + kAnswerTimeout;
       logs.find("detached-done") == std::string::npos && Clock::now() < until;) {
    MessagePtr read = host->Call(
        "exec.logs", JsonObject(on).Str("exec_id", background_id).str(), kAnswerTimeout);
    ASSERT_TRUE(read && !read->IsError()) << Describe(read);
    logs = GetString(read->result(), "data");
    if (logs.find("detached-done") == std::string::npos) std::this_thread::sleep_for(Millis(200));
  }
  EXPECT_EQ(logs, "detached-done\n");
  EXPECT_TRUE(host->sink().Notifications(background_id).empty()) << "a detached command notified";
  EXPECT_LT(host->DestroySession().count(), 5000);
  EXPECT_EQ(Join(host->AnswerProblems()), "");
  EXPECT_EQ(Join(host->sink().Problems()), "");
  EXPECT_TRUE(GoneWithin(attached_sleep, Millis(15000)));
  KillSandbox(sandbox);
  ExpectNoSandboxLeft();
}

// End of stdin right behind the requests, before their handlers have run: the commands
// they start are cancelled all the same, since whether a request is attached is known
// when it is dispatched, not when its thread gets to it; the detached one still starts.
TEST_F(SessionTest, EndOfInputRightAfterTheRequestsStillCancelsThem) {
  std::string sandbox;
  std::unique_ptr<InProcessHost> host = HostWithSandbox(&sandbox);
  ASSERT_NE(host, nullptr);
  const std::string sleeping = UniqueSleep(306);
  auto on = JsonObject().Str("sandbox_id", sandbox);
  std::vector<std::string> runs, starts;
  for (int k = 0; k < 4; ++k) {
    runs.push_back(host->Send("exec.run", JsonObject(on).Str("command", sleeping).str()));
    starts.push_back(host->Send("exec.start", JsonObject(on).Str("command", sleeping).str()));
  }
  const std::string detached = host->Send(
      "exec.start", JsonObject(on).Str("command", "echo detached").Bool("detached", true).str());
  host->EndOfInput();

  // One deadline for them all, so that a broken build fails in a minute, not in eight.
  const auto until = Clock::now() + kAnswerTimeout;
  auto left = [&] {
    return std::max(Millis(0), std::chrono::duration_cast<Millis>(until - Clock::now()));
  };
  for (const std::string& run : runs) {
    MessagePtr ran = host->sink().WaitResponse(run, left());
    EXPECT_TRUE(ran && ran->EppCode() == "E8009") << Describe(ran);
  }
  for (const std::string& start : starts) {
    // Cancelled before it reached execd it fails; after, it ends with a cancelled exit.
    MessagePtr started = host->sink().WaitResponse(start, left());
    ASSERT_NE(started, nullptr) << start << " never answered";
    if (started->IsError()) {
      EXPECT_EQ(started->EppCode(), "E8009") << started->raw;
      continue;
    }
    const std::string exec_id = GetString(started->result(), "exec_id");
    ExecTrace trace = TraceExec(host->sink(), exec_id, started, left(), Millis(0));
    ASSERT_NE(trace.exit, nullptr) << Join(trace.problems);
    EXPECT_TRUE(GetBool(trace.exit->params(), "cancelled")) << trace.exit->raw;
  }
  MessagePtr background = host->sink().WaitResponse(detached, kAnswerTimeout);
  EXPECT_TRUE(background && !GetString(background->result(), "exec_id").empty())
      << Describe(background);
  EXPECT_LT(host->DestroySession().count(), 5000);
  EXPECT_EQ(Join(host->AnswerProblems()), "");
  EXPECT_EQ(Join(host->sink().Problems()), "");
  EXPECT_TRUE(GoneWithin(sleeping, Millis(15000)));
  KillSandbox(sandbox);
  ExpectNoSandboxLeft();
}

// $/cancel landing at every moment of a short request's life: before it reaches execd,
// while its command runs, as it ends, after it answered. Each request is answered once,
// either with its whole exact result or with E8009; an exec.start answered with an
// exec_id ends with exactly one exec.exit. Several sessions do it at once on one sandbox.
//
// Each session has one such request in flight at a time, and the delay before its cancel
// is scaled to how long the request takes in this build (ThreadSanitizer makes it several
// times slower), so the cancel lands across its whole life in any build.
TEST_F(SessionTest, CancelsRacingTheEndOfTheirRequests) {
  constexpr int kHosts = 4;
  constexpr int kRounds = 30;
  std::string sandbox;
  std::unique_ptr<InProcessHost> owner = HostWithSandbox(&sandbox);
  ASSERT_NE(owner, nullptr);

  OnThreads(kHosts, [&](int h) {
    InProcessHost host(core(), Config(h % 2 ? kKeyB : kKeyA));
    ASSERT_NE(host.Initialize(), nullptr);
    auto run_params = [&](const std::string& word) {
      return JsonObject().Str("sandbox_id", sandbox).Str("command", "echo " + word).str();
    };
    // How long an uncancelled exec.run takes here.
    Millis longest(1);
    for (int w = 0; w < 3; ++w) {
      const auto sent = Clock::now();
      MessagePtr warm = host.Call("exec.run", run_params("warm"), kAnswerTimeout);
      ASSERT_TRUE(warm && GetString(warm->result(), "stdout") == "warm\n") << Describe(warm);
      longest = std::max(longest, std::chrono::duration_cast<Millis>(Clock::now() - sent));
    }

    std::mt19937 rng(77 + h);
    int completed = 0, cancelled = 0;
    for (int k = 0; k < kRounds; ++k) {
      const std::string word = "r" + std::to_string(h) + "-" + std::to_string(k);
      const bool stream = k % 3 == 0;
      const std::string id = host.Send(stream ? "exec.start" : "exec.run", run_params(word));
      // From at once to half again the longest warm-up run: before, during, after.
      std::this_thread::sleep_for(Millis(rng() % 4 == 0 ? 0 : rng() % (longest.count() * 3 / 2 + 1)));
      host.CancelRequest(id);
      if (k % 10 == 0) host.CancelRequest("\"no-such-request\"");

      MessagePtr answer = host.sink().WaitResponse(id, kAnswerTimeout);
      ASSERT_NE(answer, nullptr) << id << " never answered";
      if (answer->IsError()) {
        EXPECT_EQ(answer->EppCode(), "E8009") << answer->raw;
        ++cancelled;
        continue;
      }
      if (!stream) {
        EXPECT_EQ(GetString(answer->result(), "stdout"), word + "\n") << answer->raw;
        EXPECT_EQ(GetInt(answer->result(), "exit_code", -1), 0) << answer->raw;
        ++completed;
        continue;
      }
      const std::string exec_id = GetString(answer->result(), "exec_id");
      ASSERT_FALSE(exec_id.empty()) << answer->raw;
      ExecTrace trace = TraceExec(host.sink(), exec_id, answer, kAnswerTimeout, Millis(0));
      EXPECT_TRUE(trace.problems.empty()) << Join(trace.problems);
      ASSERT_NE(trace.exit, nullptr);
      if (GetBool(trace.exit->params(), "cancelled")) {
        EXPECT_TRUE(IsNull(trace.exit->params(), "exit_code")) << trace.exit->raw;
        EXPECT_EQ((word + "\n").compare(0, trace.stdout_data.size(), trace.stdout_data), 0);
        ++cancelled;
      } else {
        EXPECT_EQ(GetInt(trace.exit->params(), "exit_code", -1), 0) << trace.exit->raw;
        EXPECT_EQ(trace.stdout_data, word + "\n");
        ++completed;
      }
    }
    EXPECT_EQ(completed + cancelled, kRounds);
    EXPECT_LT(host.DestroySession().count(), 15000);
    EXPECT_EQ(Join(host.AnswerProblems()), "");
    EXPECT_EQ(Join(host.sink().Problems()), "");
    std::printf("host %d: %d completed, %d cancelled (a run took up to %lld ms)\n", h, completed,
                cancelled, static_cast<long long>(longest.count()));
  });
  MessagePtr killed =
      owner->Call("sandbox.kill", JsonObject().Str("sandbox_id", sandbox).str(), kAnswerTimeout);
  EXPECT_TRUE(killed && GetBool(killed->result(), "killed")) << Describe(killed);
  ExpectNoSandboxLeft();
}

}  // namespace
}  // namespace abx::epp::testing
