// The bridge killed (SIGKILL) in the middle of a session: what was in flight is answered
// E8002 at once by the shim (nothing hangs), the shim's next request starts a new bridge
// and works, and a detached command started before the crash lives on in the sandbox,
// its output still readable with exec.logs through the new bridge.

#include <signal.h>

#include <chrono>
#include <string>
#include <thread>

#include <gtest/gtest.h>

#include "tests/e2e/harness.h"

namespace abx::e2e {
namespace {

class BridgeCrashTest : public TestEnv {};

TEST_F(BridgeCrashTest, KilledBridgeFailsInFlightRequestsAndTheNextRequestRecovers) {
  REQUIRE_FAKE("inspects the bridge's processes beside the fake");
  EppSession* shim = StartInitializedShim();
  ASSERT_NE(shim, nullptr);
  const std::string sandbox = CreateSandbox(shim);
  ASSERT_FALSE(sandbox.empty());
  const auto old_bridge = BridgePid();
  ASSERT_TRUE(old_bridge.has_value());

  // A detached command that outlives the bridge: six lines over ~3 s, then exit 5.
  MessagePtr detached = shim->Request(
      "exec.start",
      JsonObject().Str("sandbox_id", sandbox)
          .Str("command", "for i in 1 2 3 4 5 6; do echo tick$i; sleep 0.5; done; exit 5")
          .Bool("detached", true).str(),
      Millis(20000));
  ASSERT_NE(detached, nullptr);
  ASSERT_FALSE(detached->IsError()) << detached->raw;
  const std::string detached_id = GetString(detached->result(), "exec_id");
  ASSERT_FALSE(detached_id.empty()) << detached->raw;

  // In flight when the bridge dies: an exec.run that would take 30 s, and an attached
  // command whose stream is open (its exec.exit can only come from the shim now).
  const int64_t stream = shim->SendRequest(
      "exec.start",
      JsonObject().Str("sandbox_id", sandbox).Str("command", "echo begun; sleep 30").str());
  MessagePtr stream_started = shim->WaitResponse(stream, Millis(20000));
  ASSERT_NE(stream_started, nullptr);
  ASSERT_FALSE(stream_started->IsError()) << stream_started->raw;
  const std::string stream_id = GetString(stream_started->result(), "exec_id");
  ASSERT_NE(shim->WaitNotification(stream_id, "exec.output", Millis(10000)), nullptr)
      << "the attached command's first output did not come";
  const int64_t long_run = shim->SendRequest(
      "exec.run", JsonObject().Str("sandbox_id", sandbox).Str("command", "sleep 30").str());
  std::this_thread::sleep_for(Millis(500));  // the exec.run reaches execd
  ASSERT_TRUE(shim->ResponsesFor(long_run).empty()) << "exec.run of sleep 30 already answered";

  ASSERT_EQ(::kill(*old_bridge, SIGKILL), 0);
  const auto killed_at = Clock::now();
  MessagePtr failed = shim->WaitResponse(long_run, Millis(5000));
  const auto answered_in =
      std::chrono::duration_cast<Millis>(Clock::now() - killed_at).count();
  ASSERT_NE(failed, nullptr) << "the in-flight exec.run got no answer 5 s after the bridge died";
  EXPECT_TRUE(failed->IsError()) << failed->raw;
  EXPECT_EQ(failed->EppCode(), "E8002") << failed->raw;
  EXPECT_EQ(failed->ErrorCode(), -32001) << failed->raw;
  EXPECT_LT(answered_in, 2000) << "the in-flight request was answered only after "
                               << answered_in << " ms";
  // The attached command gets its one exec.exit: no exit code (none is known), E8002.
  ExecTrace trace = TraceExec(shim, stream_id, stream_started, Millis(2000));
  EXPECT_TRUE(trace.problems.empty()) << JoinProblems(trace);
  EXPECT_EQ(trace.stdout_data, "begun\n");
  ASSERT_NE(trace.exit, nullptr) << "the attached command got no exec.exit after the crash";
  EXPECT_TRUE(IsNull(trace.exit->params(), "exit_code")) << trace.exit->raw;
  const rapidjson::Value* exit_error = Find(trace.exit->params(), "error");
  ASSERT_NE(exit_error, nullptr) << trace.exit->raw;
  EXPECT_EQ(GetString(*exit_error, "code"), "E8002") << trace.exit->raw;

  // The next request of the same shim starts a new bridge and carries on (the session's
  // initialize is replayed to it).
  MessagePtr got = shim->Request("sandbox.get", JsonObject().Str("sandbox_id", sandbox).str(),
                                 Millis(20000));
  ASSERT_NE(got, nullptr);
  EXPECT_FALSE(got->IsError()) << got->raw;
  EXPECT_EQ(GetString(got->result(), "state"), "Running") << got->raw;
  const auto new_bridge = BridgePid();
  ASSERT_TRUE(new_bridge.has_value());
  EXPECT_NE(*new_bridge, *old_bridge);
  EXPECT_TRUE(ProcessAlive(*new_bridge));
  EXPECT_FALSE(ProcessAlive(*old_bridge));

  // The detached command kept running in the sandbox; its output and exit code are there.
  std::string data;
  int64_t cursor = 0;
  bool running = true;
  MessagePtr last;
  for (int i = 0; i < 100 && running; ++i) {
    last = shim->Request(
        "exec.logs",
        JsonObject().Str("sandbox_id", sandbox).Str("exec_id", detached_id).Int("cursor", cursor)
            .str(),
        Millis(20000));
    ASSERT_NE(last, nullptr);
    ASSERT_FALSE(last->IsError()) << last->raw;
    data += GetString(last->result(), "data");
    cursor = GetInt(last->result(), "cursor");
    running = GetBool(last->result(), "running");
    if (running) std::this_thread::sleep_for(Millis(100));
  }
  EXPECT_FALSE(running) << "the detached command still runs after 10 s";
  EXPECT_EQ(data, "tick1\ntick2\ntick3\ntick4\ntick5\ntick6\n");
  EXPECT_EQ(GetInt(last->result(), "exit_code", -99), 5) << last->raw;

  // And new work goes through the new bridge.
  MessagePtr ran = shim->Request(
      "exec.run", JsonObject().Str("sandbox_id", sandbox).Str("command", "echo after").str(),
      Millis(20000));
  ASSERT_NE(ran, nullptr);
  EXPECT_EQ(GetString(ran->result(), "stdout"), "after\n") << ran->raw;
}

}  // namespace
}  // namespace abx::e2e
