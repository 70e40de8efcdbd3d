// The bridge's concurrent code driven hard in one process, without gRPC: many EPP
// sessions at once over one real core::BridgeCore (its pooled HTTP client, its
// per-credential caches, its counters), each request on its own thread as the bridge
// runs them, against the real fake OpenSandbox server process; and a host too slow to
// keep up with its stream. Every outcome is checked exactly (output bytes, one answer
// per request, no sandbox left), so the test is worth running in every build; under
// --config=tsan it is how ThreadSanitizer judges the bridge's own threads
// (tools/sanitizers). Cancellation and the end of sessions: session_cancellation_test.cc.

#include <unistd.h>

#include <atomic>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include <gtest/gtest.h>

#include "bridge/base/log.h"
#include "bridge/core/bridge_core.h"
#include "bridge/http/http_client.h"
#include "tests/bridge/api/epp/in_process_host.h"
#include "tests/bridge/api/epp/session_fixture.h"
#include "tests/e2e/base64_encode.h"
#include "tests/e2e/json_util.h"

namespace abx::epp::testing {
namespace {

using e2e::GetBool;
using e2e::GetInt;
using e2e::GetString;
using e2e::IsNull;
using e2e::JsonObject;

// The main mix: kHosts sessions, each on its own thread, with two credentials (one
// session through the server proxy), pipelining everything a host does while other
// sessions do the same, and one sandbox used by two sessions at once. A status thread
// reads the core's counters and caches all the while, as `abx-opensandbox-bridge status`
// and `sandboxes` do.
TEST_F(SessionTest, ManySessionsAtOnceEachGetExactlyTheirOwnResults) {
  constexpr int kHosts = 8;
  constexpr int kStreamLines = 5000;
  const std::string suite = "concurrency-" + std::to_string(::getpid());
  std::vector<std::unique_ptr<InProcessHost>> hosts(kHosts);
  std::vector<std::string> sandboxes(kHosts);

  const int64_t requests_before = core()->counters().requests_total;
  std::atomic<bool> done{false};
  std::atomic<int64_t> status_reads{0};
  std::thread status([&] {
    int64_t last_total = requests_before;
    while (!done) {
      const core::BridgeCore::Counters counters = core()->counters();
      EXPECT_GE(counters.requests_total, last_total) << "the request counter went back";
      last_total = counters.requests_total;
      for (const core::BridgeCore::CachedSandbox& cached : core()->CachedSandboxes()) {
        EXPECT_EQ(cached.credential.rfind("credential ", 0), 0u) << cached.credential;
      }
      // The adapter registers every session's secrets as it starts, while others log.
      log::RegisterSecret(kKeyA);
      log::RegisterSecret(kKeyB);
      ++status_reads;
      std::this_thread::sleep_for(Millis(5));
    }
  });

  // 1. Sessions start and create their sandboxes, all at once.
  OnThreads(kHosts, [&](int i) {
    std::map<std::string, std::string> config = Config(i % 2 ? kKeyB : kKeyA);
    if (i == 3) config["use_server_proxy"] = "true";
    hosts[i] = std::make_unique<InProcessHost>(core(), config);
    MessagePtr init = hosts[i]->Initialize();
    ASSERT_TRUE(init && !init->IsError()) << Describe(init);
    sandboxes[i] = CreateSandbox(
        hosts[i].get(),
        JsonObject().Str("suite", suite).Str("host", std::to_string(i)).str());
  });
  for (const std::string& id : sandboxes) ASSERT_FALSE(id.empty());

  // 2. Each host pipelines the mix on its own sandbox and its neighbour's.
  OnThreads(kHosts, [&](int i) {
    InProcessHost& host = *hosts[i];
    const std::string& own = sandboxes[i];
    const std::string& neighbour = sandboxes[(i + 1) % kHosts];
    const std::string blob = RandomBytes(48 * 1024 + i, 1000 + i);
    const std::string note = "from host " + std::to_string(i) + " \xc3\xa9\n";
    auto on = [](const std::string& sandbox) { return JsonObject().Str("sandbox_id", sandbox); };

    const std::string run = host.Send(
        "exec.run", on(own).Str("command", "seq 1 3000; printf 'e%s\\n' 1 2 3 >&2; exit 3").str());
    const std::string run_stdin =
        host.Send("exec.run", on(own).Raw("argv", R"(["tr","a-z","A-Z"])")
                                  .Str("stdin", "line one\nline two " + std::to_string(i) + "\n")
                                  .str());
    const std::string stream =
        host.Send("exec.start", on(own).Str("command", "seq 1 " + std::to_string(kStreamLines)).str());
    const std::string ticks = host.Send(
        "exec.start",
        on(own).Str("command", "for i in $(seq 1 400); do echo tick-$i; sleep 0.05; done").str());
    const std::string write = host.Send(
        "files.write",
        on(own).Str("path", "/blob.bin").Str("data", e2e::Base64(blob)).Str("encoding", "base64").str());
    const std::string get = host.Send("sandbox.get", on(own).str());
    const std::string list = host.Send(
        "sandbox.list",
        JsonObject().Raw("metadata", JsonObject().Str("suite", suite).Str("host", std::to_string(i)).str()).str());
    const std::string neighbour_run =
        host.Send("exec.run", on(neighbour).Str("command", "echo neighbour-" + std::to_string(i)).str());
    const std::string neighbour_write = host.Send(
        "files.write", on(neighbour).Str("path", "/from-host-" + std::to_string(i) + ".txt").Str("data", note).str());
    const std::string doctor = host.Send("provider.doctor", on(own).str());

    // Cancel the ticking command once it has printed something.
    MessagePtr ticks_started = host.sink().WaitResponse(ticks, kAnswerTimeout);
    const std::string ticks_exec = ticks_started ? GetString(ticks_started->result(), "exec_id") : "";
    ASSERT_FALSE(ticks_exec.empty()) << Describe(ticks_started);
    ASSERT_NE(host.sink().WaitNotification(ticks_exec, "exec.output", kAnswerTimeout), nullptr);
    // While it runs, process.list names it by its exec_id (the tag the session's exec.start
    // remembered in the shared EndpointCache, beside every other session's).
    MessagePtr processes = host.Call("process.list", on(own).str(), kAnswerTimeout);
    const rapidjson::Value* listed_processes =
        processes ? e2e::Find(processes->result(), "processes") : nullptr;
    bool ticking_listed = false;
    for (size_t p = 0; listed_processes && listed_processes->IsArray() && p < listed_processes->Size(); ++p) {
      ticking_listed = ticking_listed || GetString((*listed_processes)[p], "exec_id") == ticks_exec;
    }
    EXPECT_TRUE(ticking_listed) << "host " << i << ": " << e2e::Abbreviate(Describe(processes), 600);
    host.CancelRequest(ticks);

    // Reads follow their writes.
    MessagePtr written = host.sink().WaitResponse(write, kAnswerTimeout);
    ASSERT_TRUE(written && GetInt(written->result(), "size") == static_cast<int64_t>(blob.size()))
        << Describe(written);
    MessagePtr read = host.Call(
        "files.read", on(own).Str("path", "/blob.bin").Str("encoding", "base64").str(), kAnswerTimeout);
    ASSERT_NE(read, nullptr);
    EXPECT_EQ(GetString(read->result(), "data"), e2e::Base64(blob)) << "host " << i;
    EXPECT_TRUE(GetBool(read->result(), "eof"));
    MessagePtr neighbour_written = host.sink().WaitResponse(neighbour_write, kAnswerTimeout);
    ASSERT_TRUE(neighbour_written && !neighbour_written->IsError()) << Describe(neighbour_written);
    MessagePtr neighbour_read = host.Call(
        "files.read", on(neighbour).Str("path", "/from-host-" + std::to_string(i) + ".txt").str(),
        kAnswerTimeout);
    EXPECT_TRUE(neighbour_read && GetString(neighbour_read->result(), "data") == note)
        << Describe(neighbour_read);

    MessagePtr ran = host.sink().WaitResponse(run, kAnswerTimeout);
    ASSERT_NE(ran, nullptr);
    EXPECT_EQ(GetInt(ran->result(), "exit_code", -1), 3) << Describe(ran);
    EXPECT_EQ(GetString(ran->result(), "stdout"), SeqOutput(3000)) << "host " << i;
    EXPECT_EQ(GetString(ran->result(), "stderr"), "e1\ne2\ne3\n") << Describe(ran);

    MessagePtr ran_stdin = host.sink().WaitResponse(run_stdin, kAnswerTimeout);
    EXPECT_TRUE(ran_stdin &&
                GetString(ran_stdin->result(), "stdout") == "LINE ONE\nLINE TWO " + std::to_string(i) + "\n" &&
                GetInt(ran_stdin->result(), "exit_code", -1) == 0)
        << Describe(ran_stdin);

    MessagePtr streamed = host.sink().WaitResponse(stream, kAnswerTimeout);
    const std::string stream_exec = streamed ? GetString(streamed->result(), "exec_id") : "";
    ASSERT_FALSE(stream_exec.empty()) << Describe(streamed);
    ExecTrace stream_trace = TraceExec(host.sink(), stream_exec, streamed, kAnswerTimeout);
    EXPECT_TRUE(stream_trace.problems.empty()) << Join(stream_trace.problems);
    EXPECT_EQ(stream_trace.stdout_data, SeqOutput(kStreamLines)) << "host " << i;
    EXPECT_EQ(stream_trace.stderr_data, "");
    ASSERT_NE(stream_trace.exit, nullptr);
    EXPECT_EQ(GetInt(stream_trace.exit->params(), "exit_code", -1), 0) << stream_trace.exit->raw;

    ExecTrace tick_trace = TraceExec(host.sink(), ticks_exec, ticks_started, kAnswerTimeout);
    EXPECT_TRUE(tick_trace.problems.empty()) << Join(tick_trace.problems);
    ASSERT_NE(tick_trace.exit, nullptr);
    EXPECT_TRUE(GetBool(tick_trace.exit->params(), "cancelled")) << tick_trace.exit->raw;
    EXPECT_TRUE(IsNull(tick_trace.exit->params(), "exit_code")) << tick_trace.exit->raw;
    // What came is the command's own output up to the cancel: whole lines, in order.
    std::string all_ticks;
    for (int t = 1; t <= 400; ++t) all_ticks += "tick-" + std::to_string(t) + "\n";
    EXPECT_FALSE(tick_trace.stdout_data.empty());
    EXPECT_EQ(all_ticks.compare(0, tick_trace.stdout_data.size(), tick_trace.stdout_data), 0)
        << "not a prefix of the command's output: " << e2e::Abbreviate(tick_trace.stdout_data, 200);
    EXPECT_LT(tick_trace.stdout_data.size(), all_ticks.size()) << "the cancel did not stop it";
    EXPECT_EQ(tick_trace.stdout_data.empty() ? '?' : tick_trace.stdout_data.back(), '\n');

    MessagePtr got = host.sink().WaitResponse(get, kAnswerTimeout);
    EXPECT_TRUE(got && GetString(got->result(), "id") == own &&
                GetString(got->result(), "state") == "Running")
        << Describe(got);
    MessagePtr listed = host.sink().WaitResponse(list, kAnswerTimeout);
    ASSERT_NE(listed, nullptr);
    const rapidjson::Value* found = e2e::Find(listed->result(), "sandboxes");
    ASSERT_TRUE(found && found->IsArray() && found->Size() == 1) << Describe(listed);
    EXPECT_EQ(GetString((*found)[0], "id"), own);
    MessagePtr neighbour_ran = host.sink().WaitResponse(neighbour_run, kAnswerTimeout);
    EXPECT_TRUE(neighbour_ran &&
                GetString(neighbour_ran->result(), "stdout") == "neighbour-" + std::to_string(i) + "\n")
        << Describe(neighbour_ran);
    // The probe of this sandbox's execd (cached in the EndpointCache beside other sessions'
    // endpoints). The doctor's other checks are about the server and the machine.
    MessagePtr doctored = host.sink().WaitResponse(doctor, kAnswerTimeout);
    const rapidjson::Value* checks = doctored ? e2e::Find(doctored->result(), "checks") : nullptr;
    bool probed = false;
    for (size_t c = 0; checks && checks->IsArray() && c < checks->Size(); ++c) {
      probed = probed || (GetString((*checks)[c], "name") == "execd_version" &&
                          GetBool((*checks)[c], "ok") &&
                          GetString((*checks)[c], "detail").find(own) != std::string::npos);
    }
    EXPECT_TRUE(probed) << Describe(doctored);
  });

  // 3. Kill (twice: idempotent), shut down, exit; then the books must balance.
  OnThreads(kHosts, [&](int i) {
    InProcessHost& host = *hosts[i];
    const std::string on_own = JsonObject().Str("sandbox_id", sandboxes[i]).str();
    MessagePtr killed = host.Call("sandbox.kill", on_own, kAnswerTimeout);
    EXPECT_TRUE(killed && GetBool(killed->result(), "killed")) << Describe(killed);
    MessagePtr again = host.Call("sandbox.kill", on_own, kAnswerTimeout);
    EXPECT_TRUE(again && again->result().IsObject() && !GetBool(again->result(), "killed", true))
        << Describe(again);
    MessagePtr shut = host.Call("shutdown", "{}", kAnswerTimeout);
    EXPECT_TRUE(shut && shut->IsResponse() && shut->result().IsNull()) << Describe(shut);
    MessagePtr refused = host.Call("sandbox.get", on_own, kAnswerTimeout);
    EXPECT_TRUE(refused && refused->ErrorCode() == -32000) << Describe(refused);
    host.Notify("exit", "{}");
    EXPECT_TRUE(host.session()->exit_requested());
    const Millis took = host.DestroySession();
    EXPECT_LT(took.count(), 5000) << "an idle session took that long to end";
    EXPECT_EQ(Join(host.AnswerProblems()), "") << "host " << i;
    EXPECT_EQ(Join(host.sink().Problems()), "") << "host " << i;
  });
  done = true;
  status.join();
  EXPECT_GT(status_reads.load(), 0);

  ExpectNoSandboxLeft();
  // Every request a session dispatched was counted: per host a create, 13 in the mix,
  // two kills and the shutdown (initialize and refused requests are not dispatched).
  EXPECT_EQ(core()->counters().requests_total - requests_before, kHosts * 17);
}

// A host that stops reading: the HTTP client's queue between its I/O thread and the
// request thread fills, the transfer is paused, and resumed once the host reads again;
// not a byte is lost or reordered. A host reading at full speed beside it gets its
// stream whole too.
TEST_F(SessionTest, SlowHostHoldsBackItsStreamAndLosesNothing) {
  // 4000 lines of 3000 bytes: more than the client's 8 MiB stream queue holds.
  constexpr int kLines = 4000, kWidth = 3000;
  std::string sandbox;
  std::unique_ptr<InProcessHost> slow = HostWithSandbox(&sandbox);
  ASSERT_NE(slow, nullptr);
  InProcessHost fast(core(), Config(kKeyB));
  ASSERT_NE(fast.Initialize(), nullptr);
  const int64_t pauses_before = core()->http().client()->counters().stream_pauses.load();

  // The slow host takes its first exec.output only once the client has paused the
  // transfer (or after two minutes, which fails the check below), then reads on.
  slow->sink().set_before_output([&] {
    const auto until = Clock::now() + Millis(120000);
    while (core()->http().client()->counters().stream_pauses.load() == pauses_before &&
           Clock::now() < until) {
      std::this_thread::sleep_for(Millis(10));
    }
  });
  auto command = [&](int lines) {
    return JsonObject()
        .Str("sandbox_id", sandbox)
        .Str("command", "head -c " + std::to_string(lines * kWidth) + " /dev/zero | tr '\\0' x | fold -w " +
                            std::to_string(kWidth))
        .str();
  };
  const std::string slow_start = slow->Send("exec.start", command(kLines));
  const std::string fast_start = fast.Send("exec.start", command(kLines / 4));
  auto expected = [&](int lines) {
    std::string out;
    for (int i = 0; i < lines; ++i) out += std::string(kWidth, 'x') + "\n";
    return out;
  };
  for (auto [host, id, lines] : {std::make_tuple(&fast, fast_start, kLines / 4),
                                 std::make_tuple(slow.get(), slow_start, kLines)}) {
    MessagePtr started = host->sink().WaitResponse(id, kAnswerTimeout);
    const std::string exec_id = started ? GetString(started->result(), "exec_id") : "";
    ASSERT_FALSE(exec_id.empty()) << Describe(started);
    ExecTrace trace = TraceExec(host->sink(), exec_id, started, Millis(180000));
    EXPECT_TRUE(trace.problems.empty()) << Join(trace.problems);
    EXPECT_TRUE(trace.stdout_data == expected(lines))
        << "got " << trace.stdout_data.size() << " bytes, not the " << expected(lines).size()
        << " printed";
    ASSERT_NE(trace.exit, nullptr);
    EXPECT_EQ(GetInt(trace.exit->params(), "exit_code", -1), 0) << trace.exit->raw;
  }
  EXPECT_GT(core()->http().client()->counters().stream_pauses.load(), pauses_before)
      << "the slow host never held the transfer back: the test did not test back-pressure";
  EXPECT_EQ(Join(slow->AnswerProblems()), "");
  EXPECT_EQ(Join(fast.AnswerProblems()), "");
  KillSandbox(sandbox);
  ExpectNoSandboxLeft();
}

}  // namespace
}  // namespace abx::epp::testing
