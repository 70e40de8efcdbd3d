// The bridge's concurrent code driven hard in one process, without gRPC: many EPP
// sessions at once over one real core::BridgeCore (its pooled HTTP client, its
// per-credential caches, its counters), each request on its own thread as the bridge
// runs them, against the real fake OpenSandbox server process. Cancellation mid-stream,
// sessions sharing a sandbox, sessions destroyed with requests in flight, shutdown, end
// of input. Every outcome is checked exactly (output bytes, one answer per request, no
// sandbox left), so the test is worth running in every build; under --config=tsan it is
// how ThreadSanitizer judges the bridge's own threads (tools/sanitizers).

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <functional>
#include <random>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include <gtest/gtest.h>

#include "bridge/core/bridge_core.h"
#include "bridge/core/log.h"
#include "bridge/upstream/http_client.h"
#include "tests/bridge/epp/in_process_host.h"
#include "tests/bridge/fake_upstream.h"
#include "tests/e2e/base64_encode.h"
#include "tests/e2e/json_util.h"
#include "tests/e2e/process.h"

namespace abx::epp::testing {
namespace {

using bridge_test::FakeUpstreamTest;
using e2e::GetBool;
using e2e::GetInt;
using e2e::GetString;
using e2e::IsNull;
using e2e::JsonObject;
using e2e::JsonQuote;

// Waits on a live local fake: generous, because under ThreadSanitizer both the bridge
// code and the fake run 5-15x slower.
constexpr Millis kAnswerTimeout(60000);

// "1\n2\n…n\n", as `seq 1 n` prints it.
std::string SeqOutput(int n) {
  std::string out;
  for (int i = 1; i <= n; ++i) out += std::to_string(i) + "\n";
  return out;
}

std::string RandomBytes(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::string out(n, '\0');
  for (char& c : out) c = static_cast<char>(rng() & 0xff);
  return out;
}

// "sleep 3N.<pid>1": the fake runs commands on this host, so a process listing also
// shows other tests' commands; this one is this test process's alone.
std::string UniqueSleep(int seconds) {
  return "sleep " + std::to_string(seconds) + "." + std::to_string(::getpid()) + "1";
}

// True once no process on this host runs `command` (within `timeout`).
bool GoneWithin(const std::string& command, Millis timeout) {
  const auto deadline = Clock::now() + timeout;
  while (!e2e::FindProcesses({command}).empty()) {
    if (Clock::now() > deadline) return false;
    std::this_thread::sleep_for(Millis(100));
  }
  return true;
}

std::string Describe(const MessagePtr& m) { return m ? m->raw : std::string("(no answer)"); }

// Runs `body(i)` on `n` threads at once and waits for all of them.
void OnThreads(int n, const std::function<void(int)>& body) {
  std::vector<std::thread> threads;
  for (int i = 0; i < n; ++i) threads.emplace_back(body, i);
  for (std::thread& t : threads) t.join();
}

class SessionConcurrencyTest : public FakeUpstreamTest {
 protected:
  // A host with a sandbox of its own, created and checked; null with a failure.
  std::unique_ptr<InProcessHost> HostWithSandbox(std::string* sandbox_id,
                                                 const std::string& key = kKeyA) {
    auto host = std::make_unique<InProcessHost>(core(), Config(key));
    MessagePtr init = host->Initialize();
    if (!init || init->IsError()) {
      ADD_FAILURE() << "initialize: " << Describe(init);
      return nullptr;
    }
    *sandbox_id = CreateSandbox(host.get(), "{}");
    if (sandbox_id->empty()) return nullptr;
    return host;
  }

  // sandbox.create; the id, or "" with a failure.
  std::string CreateSandbox(InProcessHost* host, const std::string& metadata_json) {
    MessagePtr created = host->Call(
        "sandbox.create",
        JsonObject().Str("template", "base").Raw("metadata", metadata_json).str(),
        kAnswerTimeout);
    const std::string id = created ? GetString(created->result(), "id") : "";
    if (id.empty() || GetString(created->result(), "state") != "Running") {
      ADD_FAILURE() << "sandbox.create: " << Describe(created);
      return "";
    }
    return id;
  }

  void KillSandbox(const std::string& sandbox_id) {
    InProcessHost host(core(), Config(kKeyA));
    ASSERT_NE(host.Initialize(), nullptr);
    MessagePtr killed = host.Call("sandbox.kill", JsonObject().Str("sandbox_id", sandbox_id).str(),
                                  kAnswerTimeout);
    EXPECT_TRUE(killed && GetBool(killed->result(), "killed")) << Describe(killed);
  }
};

// The main mix: kHosts sessions, each on its own thread, with two credentials (one
// session through the server proxy), pipelining everything a host does while other
// sessions do the same, and one sandbox used by two sessions at once. A status thread
// reads the core's counters and caches all the while, as `abx-opensandbox-bridge status`
// and `sandboxes` do.
TEST_F(SessionConcurrencyTest, ManySessionsAtOnceEachGetExactlyTheirOwnResults) {
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
      core::log::RegisterSecret(kKeyA);
      core::log::RegisterSecret(kKeyB);
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
    // remembered in the shared Upstream, beside every other session's).
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
    // The probe of this sandbox's execd (cached in the Upstream beside other sessions'
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

// A session destroyed (the host's stream gone) with a command streaming, a command
// collecting, and a create waiting for its sandbox: every one is cancelled and answered,
// the destructor returns promptly, the commands end at the fake, the half-made sandbox
// is killed. A second session whose host is already unreachable (writes fail) ends the
// same way.
TEST_F(SessionConcurrencyTest, DestroyedSessionCancelsAndAnswersEverythingInFlight) {
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
  // Both commands run at the fake by now (the collecting one was sent before the create).
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
TEST_F(SessionConcurrencyTest, ShutdownAnswersLastAfterEverythingInFlightEnded) {
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
TEST_F(SessionConcurrencyTest, EndOfInputCancelsOnlyAttachedCommands) {
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
  // The host still reads answers after its stdin ended (epp1.md §1): the detached
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

// A host that stops reading: the HTTP client's queue between its I/O thread and the
// request thread fills, the transfer is paused, and resumed once the host reads again;
// not a byte is lost or reordered. A host reading at full speed beside it gets its
// stream whole too.
TEST_F(SessionConcurrencyTest, SlowHostHoldsBackItsStreamAndLosesNothing) {
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

// $/cancel landing at every moment of a short request's life: before it reaches execd,
// while its command runs, as it ends, after it answered. Each request is answered once,
// either with its whole exact result or with E8009; an exec.start answered with an
// exec_id ends with exactly one exec.exit. Several sessions do it at once on one sandbox.
//
// Each session has one such request in flight at a time, and the delay before its cancel
// is scaled to how long the request takes in this build (ThreadSanitizer makes it several
// times slower), so the cancel lands across its whole life in any build.
TEST_F(SessionConcurrencyTest, CancelsRacingTheEndOfTheirRequests) {
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
