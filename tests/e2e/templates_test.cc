// The templates feature end to end (docs/epp1.md §3): a template built from a base, a
// local file and two commands is what sandbox.create {template} starts; its output and
// phases arrive before the answer; a failing step is E8010 with the step, its exit code
// and its output's tail, and leaves no sandbox and no snapshot; a rebuild replaces the
// old version while creates go on; a cancel leaves nothing behind.

#include <atomic>
#include <csignal>
#include <fstream>
#include <string>
#include <thread>

#include <gtest/gtest.h>

#include "tests/e2e/harness.h"

namespace abx::e2e {
namespace {

constexpr Millis kBuildTimeout{120000};

class TemplatesTest : public TestEnv {
 protected:
  // templates.build with `name`, the local file `setup.sh` and `run` (a JSON array).
  int64_t StartBuild(EppSession* shim, const std::string& name, const std::string& run_json) {
    const std::string local = root_dir() + "/setup.sh";
    { std::ofstream(local) << "echo from-the-local-file\n"; }
    return shim->SendRequest("templates.build",
                             JsonObject()
                                 .Str("name", name)
                                 .Raw("files", "[" + JsonObject()
                                                         .Str("local_path", local)
                                                         .Str("path", "/srv/setup/setup.sh")
                                                         .Str("mode", "0755")
                                                         .str() +
                                                   "]")
                                 .Raw("run", run_json)
                                 .str());
  }
  std::optional<FakeStats> Stats() { return live() ? std::nullopt : fake().Stats(); }
  // Waits until the fake holds no sandbox and no snapshot.
  bool NothingLeft(Millis within = Millis(15000)) {
    const auto deadline = Clock::now() + within;
    while (Clock::now() < deadline) {
      auto stats = Stats();
      if (stats && stats->live_sandboxes == 0 && stats->snapshots == 0) return true;
      std::this_thread::sleep_for(Millis(100));
    }
    return false;
  }
  // Waits for the build's $/progress phase.
  bool PhaseReached(EppSession* shim, int64_t id, const std::string& phase, Millis within = Millis(30000)) {
    const auto deadline = Clock::now() + within;
    while (Clock::now() < deadline) {
      for (const MessagePtr& n : shim->NotificationsByMethod("$/progress")) {
        if (GetInt(n->params(), "id") == id && GetString(n->params(), "phase") == phase) return true;
      }
      std::this_thread::sleep_for(Millis(50));
    }
    return false;
  }
};

TEST_F(TemplatesTest, ABuiltTemplateIsWhatCreateStarts) {
  EppSession* shim = StartInitializedShim();
  ASSERT_NE(shim, nullptr);
  const int64_t id = StartBuild(shim, "e2e-tools",
                                R"(["/srv/setup/setup.sh > /srv/setup/ran.txt", "echo built; echo oops >&2; mkdir -p /srv/made"])");
  MessagePtr built = shim->WaitResponse(id, kBuildTimeout);
  ASSERT_NE(built, nullptr);
  ASSERT_FALSE(built->IsError()) << built->raw;
  EXPECT_EQ(GetString(built->result(), "name"), "e2e-tools");
  EXPECT_EQ(GetString(built->result(), "from"), "base");
  const std::string snapshot = GetString(built->result(), "snapshot_id");
  ASSERT_FALSE(snapshot.empty());
  // Phases and output, all before the answer.
  std::vector<std::string> phases;
  std::string output_of_step_1;
  for (const MessagePtr& m : shim->AllMessages()) {
    if (m->method() == "$/progress" && GetInt(m->params(), "id") == id) {
      EXPECT_LT(m->index, built->index);
      phases.push_back(GetString(m->params(), "phase") +
                       (Find(m->params(), "step") ? std::to_string(GetInt(m->params(), "step")) : ""));
    }
    if (m->method() == "templates.output" && GetInt(m->params(), "id") == id) {
      EXPECT_LT(m->index, built->index);
      if (GetInt(m->params(), "step") == 1) output_of_step_1 += GetString(m->params(), "data");
    }
  }
  EXPECT_EQ(phases, (std::vector<std::string>{"create", "upload", "run0", "run1", "snapshot"}));
  EXPECT_NE(output_of_step_1.find("built\n"), std::string::npos) << output_of_step_1;
  EXPECT_NE(output_of_step_1.find("oops\n"), std::string::npos) << output_of_step_1;

  MessagePtr listed = shim->Request("templates.list", "{}");
  ASSERT_NE(listed, nullptr);
  const rapidjson::Value* templates = Find(listed->result(), "templates");
  ASSERT_TRUE(templates && templates->IsArray()) << listed->raw;
  std::string listed_snapshot;
  for (const auto& t : templates->GetArray()) {
    if (GetString(t, "name") == "e2e-tools") listed_snapshot = GetString(t, "snapshot_id");
  }
  EXPECT_EQ(listed_snapshot, snapshot) << listed->raw;

  // A new session's create finds it by name.
  EppSession* other = StartInitializedShim();
  ASSERT_NE(other, nullptr);
  MessagePtr made = other->Request("sandbox.create", R"({"template":"e2e-tools"})", Millis(30000));
  ASSERT_NE(made, nullptr);
  ASSERT_FALSE(made->IsError()) << made->raw;
  EXPECT_EQ(GetString(made->result(), "template"), "e2e-tools") << made->raw;
  const std::string sandbox = GetString(made->result(), "id");
  MessagePtr ran = other->Request("exec.run", JsonObject()
                                                  .Str("sandbox_id", sandbox)
                                                  .Str("command", "cat /srv/setup/ran.txt; test -d /srv/made && echo dir")
                                                  .str());
  ASSERT_NE(ran, nullptr);
  EXPECT_EQ(GetString(ran->result(), "stdout"), "from-the-local-file\ndir\n") << ran->raw;

  // Its template shows in get and list, also to a bridge that did not create it: from
  // the name of the snapshot the server says it was restored from, asked once.
  StopBridge();
  EppSession* fresh = StartInitializedShim();
  ASSERT_NE(fresh, nullptr);
  const std::string get = JsonObject().Str("sandbox_id", sandbox).str();
  MessagePtr got = fresh->Request("sandbox.get", get);
  ASSERT_NE(got, nullptr);
  EXPECT_EQ(GetString(got->result(), "template"), "e2e-tools") << got->raw;
  if (!live()) {
    EXPECT_EQ(UpstreamRequestsDuring([&] { got = fresh->Request("sandbox.get", get); }), 1)
        << "the snapshot's name is remembered";
    EXPECT_EQ(GetString(got->result(), "template"), "e2e-tools") << got->raw;
  }
  MessagePtr all = fresh->Request("sandbox.list", "{}");
  ASSERT_NE(all, nullptr);
  std::string listed_template = "<absent>";
  if (const rapidjson::Value* sandboxes = Find(all->result(), "sandboxes"); sandboxes && sandboxes->IsArray()) {
    for (const auto& s : sandboxes->GetArray()) {
      if (GetString(s, "id") == sandbox) listed_template = GetString(s, "template");
    }
  }
  EXPECT_EQ(listed_template, "e2e-tools") << all->raw;

  // Deleted: the name is an image reference again (which the fake's catalog lacks).
  MessagePtr deleted = shim->Request("templates.delete", JsonObject().Str("name", "e2e-tools").str());
  EXPECT_TRUE(GetBool(deleted->result(), "deleted")) << deleted->raw;
  deleted = shim->Request("templates.delete", JsonObject().Str("name", "e2e-tools").str());
  EXPECT_FALSE(GetBool(deleted->result(), "deleted", true)) << deleted->raw;
  listed = shim->Request("templates.list", "{}");
  EXPECT_EQ(listed->raw.find("\"e2e-tools\""), std::string::npos) << listed->raw;
}

TEST_F(TemplatesTest, AFailingStepIsE8010WithItsTailAndLeavesNothing) {
  REQUIRE_FAKE("the fake's stats");
  EppSession* shim = StartInitializedShim();
  ASSERT_NE(shim, nullptr);
  const int64_t id = StartBuild(shim, "e2e-broken", R"(["true", "echo about to fail; exit 3", "echo never"])");
  MessagePtr failed = shim->WaitResponse(id, kBuildTimeout);
  ASSERT_NE(failed, nullptr);
  EXPECT_EQ(failed->EppCode(), "E8010") << failed->raw;
  EXPECT_EQ(GetInt(failed->error(), "data.step", -1), 1) << failed->raw;
  EXPECT_EQ(GetInt(failed->error(), "data.exit_code", -1), 3) << failed->raw;
  EXPECT_EQ(GetString(failed->error(), "data.output_tail"), "about to fail\n") << failed->raw;
  for (const MessagePtr& m : shim->NotificationsByMethod("templates.output")) {
    EXPECT_NE(GetInt(m->params(), "step"), 2) << "a step after the failing one ran";
  }
  auto stats = Stats();
  ASSERT_TRUE(stats.has_value());
  EXPECT_EQ(stats->live_sandboxes, 0);
  EXPECT_EQ(stats->snapshots, 0);

  // The tail is the last 4 KiB, cut where a character begins: one 'x', then 3000 'é'
  // (two bytes each).
  failed = shim->WaitResponse(
      StartBuild(shim, "e2e-long-tail",
                 R"(["printf x; i=0; while [ $i -lt 3000 ]; do printf 'é'; i=$((i+1)); done; exit 3"])"),
      kBuildTimeout);
  ASSERT_NE(failed, nullptr);
  const std::string tail = GetString(failed->error(), "data.output_tail");
  // The provider gives the last line its newline back: 6002 bytes, the last 4096 start
  // inside an 'é', so the tail is the 2047 whole ones after it and the newline.
  EXPECT_EQ(tail.size(), 4095u) << failed->raw.substr(0, 300);
  EXPECT_EQ(tail.substr(0, 2), "\u00e9");
  EXPECT_EQ(tail.find('x'), std::string::npos);

  // Refused before anything is sent.
  MessagePtr bad = shim->Request("templates.build", JsonObject().Str("name", "Bad_Name").Raw("run", "[]").str());
  EXPECT_EQ(GetString(bad->error(), "data.field"), "name") << bad->raw;
  bad = shim->Request("templates.build",
                      JsonObject()
                          .Str("name", "ok")
                          .Raw("files", R"([{"local_path":"/no/such/file","path":"/x"}])")
                          .Raw("run", "[]")
                          .str());
  EXPECT_EQ(bad->EppCode(), "E8005") << bad->raw;
  stats = Stats();
  EXPECT_EQ(stats->live_sandboxes, 0);
}

TEST_F(TemplatesTest, ACancelledBuildLeavesNothingAndARebuildNeverFailsACreate) {
  REQUIRE_FAKE("the fake's stats");
  EppSession* shim = StartInitializedShim();
  ASSERT_NE(shim, nullptr);
  const int64_t cancelled = StartBuild(shim, "e2e-slow", R"(["sleep 30"])");
  // Cancelled while its command runs.
  bool running = false;
  for (int i = 0; i < 200 && !running; ++i) {
    std::this_thread::sleep_for(Millis(50));
    for (const MessagePtr& n : shim->NotificationsByMethod("$/progress")) {
      running = running || (GetInt(n->params(), "id") == cancelled && GetString(n->params(), "phase") == "run");
    }
  }
  ASSERT_TRUE(running);
  ASSERT_TRUE(shim->Notify("$/cancel", JsonObject().Int("id", cancelled).str()));
  MessagePtr answer = shim->WaitResponse(cancelled, Millis(20000));
  ASSERT_NE(answer, nullptr);
  EXPECT_EQ(answer->EppCode(), "E8009") << answer->raw;
  auto stats = Stats();
  EXPECT_EQ(stats->live_sandboxes, 0);
  EXPECT_EQ(stats->snapshots, 0);

  // Version one, then a rebuild while another session creates from it again and again.
  MessagePtr first = shim->WaitResponse(StartBuild(shim, "e2e-rebuilt", R"(["echo v1 > /version"])"), kBuildTimeout);
  ASSERT_FALSE(first->IsError()) << first->raw;
  EppSession* creator = StartInitializedShim();
  ASSERT_NE(creator, nullptr);
  std::atomic<bool> rebuilding{true};
  std::atomic<int> creates{0}, failures{0};
  std::string last_failure;
  std::thread creating([&] {
    while (rebuilding) {
      MessagePtr made = creator->Request("sandbox.create", R"({"template":"e2e-rebuilt"})", Millis(30000));
      ++creates;
      if (!made || made->IsError()) {
        ++failures;
        last_failure = made ? made->raw : "no answer";
        continue;
      }
      creator->Request("sandbox.kill", JsonObject().Str("sandbox_id", GetString(made->result(), "id")).str());
    }
  });
  MessagePtr second = shim->WaitResponse(StartBuild(shim, "e2e-rebuilt", R"(["echo v2 > /version"])"), kBuildTimeout);
  std::this_thread::sleep_for(Millis(300));
  rebuilding = false;
  creating.join();
  ASSERT_FALSE(second->IsError()) << second->raw;
  EXPECT_GT(creates.load(), 0);
  EXPECT_EQ(failures.load(), 0) << last_failure;
  // One version remains, and a create gets it.
  stats = Stats();
  EXPECT_EQ(stats->snapshots, 1);
  const std::string sandbox = CreateSandbox(creator, R"({"template":"e2e-rebuilt"})");
  MessagePtr read = creator->Request("files.read", JsonObject().Str("sandbox_id", sandbox).Str("path", "/version").str());
  EXPECT_EQ(GetString(read->result(), "data"), "v2\n") << read->raw;
  MessagePtr deleted = shim->Request("templates.delete", JsonObject().Str("name", "e2e-rebuilt").str());
  EXPECT_TRUE(GetBool(deleted->result(), "deleted")) << deleted->raw;
}

// A build's timeout, a cancel while its snapshot is being taken, and the end of stdin
// while it runs: each leaves no sandbox and no snapshot.
TEST_F(TemplatesTest, ATimeoutACancelInTheSnapshotAndTheEndOfStdinLeaveNothing) {
  REQUIRE_FAKE("the fake's stats and its snapshot_capture_ms fault");
  EppSession* shim = StartInitializedShim();
  ASSERT_NE(shim, nullptr);
  MessagePtr timed_out = shim->Request(
      "templates.build", JsonObject().Str("name", "e2e-timeout").Raw("run", R"(["sleep 30"])").Int("timeout", 2).str(),
      kBuildTimeout);
  ASSERT_NE(timed_out, nullptr);
  EXPECT_EQ(timed_out->EppCode(), "E8006") << timed_out->raw;
  EXPECT_TRUE(NothingLeft());

  ASSERT_TRUE(fake().SetFaults(R"({"snapshot_capture_ms":3000})"));
  const int64_t cancelled = StartBuild(shim, "e2e-cancel-snapshot", R"(["true"])");
  ASSERT_TRUE(PhaseReached(shim, cancelled, "snapshot"));
  for (int i = 0; i < 100 && Stats()->snapshots == 0; ++i) std::this_thread::sleep_for(Millis(50));
  ASSERT_EQ(Stats()->snapshots, 1) << "the snapshot was never begun";
  ASSERT_TRUE(shim->Notify("$/cancel", JsonObject().Int("id", cancelled).str()));
  MessagePtr answer = shim->WaitResponse(cancelled, Millis(20000));
  ASSERT_NE(answer, nullptr);
  EXPECT_EQ(answer->EppCode(), "E8009") << answer->raw;
  EXPECT_TRUE(NothingLeft()) << "the snapshot begun for the build, or its sandbox, was left";
  MessagePtr listed = shim->Request("templates.list", "{}");
  EXPECT_EQ(listed->raw.find("e2e-cancel-snapshot"), std::string::npos) << listed->raw;

  ASSERT_TRUE(fake().SetFaults(R"({"snapshot_capture_ms":0})"));
  EppSession* leaving = StartInitializedShim();
  ASSERT_NE(leaving, nullptr);
  const int64_t left = StartBuild(leaving, "e2e-stdin", R"(["sleep 30"])");
  ASSERT_TRUE(PhaseReached(leaving, left, "run"));
  leaving->CloseStdin();
  EXPECT_TRUE(leaving->WaitExit(Millis(20000)).has_value());
  EXPECT_TRUE(NothingLeft());
}

// The CLI a person uses: `template build NAME --from … --file LOCAL:PATH --run …` prints
// the commands' output as it happens and exits with the build's code; `template list`
// and `template delete` over the same running bridge.
TEST_F(TemplatesTest, TheBridgeCliBuildsListsAndDeletesATemplate) {
  EppSession* shim = StartInitializedShim();  // the bridge the CLI talks to
  ASSERT_NE(shim, nullptr);
  const std::string local = root_dir() + "/cli-setup.txt";
  { std::ofstream(local) << "from-the-cli-file\n"; }
  std::string output;
  auto status = RunCommand({BridgeBinary(), "template", "build", "e2e-cli", "--from", "base", "--file",
                            local + ":/srv/cli/setup.txt", "--run", "cat /srv/cli/setup.txt", "--run",
                            "echo second-step > /srv/cli/second.txt; echo done", "--socket", socket_path()},
                           ShimEnv(), kBuildTimeout, &output);
  ASSERT_TRUE(status.has_value()) << output;
  EXPECT_TRUE(status->exited && status->code == 0) << output;
  EXPECT_NE(output.find("from-the-cli-file"), std::string::npos) << output;
  EXPECT_NE(output.find("== run 2/2: echo second-step"), std::string::npos) << output;
  EXPECT_NE(output.find("template e2e-cli built from base: snapshot "), std::string::npos) << output;

  status = RunCommand({BridgeBinary(), "template", "list", "--socket", socket_path()}, ShimEnv(), Millis(30000),
                      &output);
  ASSERT_TRUE(status.has_value()) << output;
  EXPECT_EQ(status->code, 0) << output;
  EXPECT_NE(output.find("e2e-cli"), std::string::npos) << output;

  // What another session's create starts.
  const std::string sandbox = CreateSandbox(shim, R"({"template":"e2e-cli"})");
  ASSERT_FALSE(sandbox.empty());
  MessagePtr read = shim->Request("files.read", JsonObject().Str("sandbox_id", sandbox).Str("path", "/srv/cli/second.txt").str());
  ASSERT_FALSE(read->IsError()) << read->raw;
  EXPECT_EQ(GetString(read->result(), "data"), "second-step\n");

  // A failing command: its exit code is the CLI's, and the old version stays.
  status = RunCommand({BridgeBinary(), "template", "build", "e2e-cli", "--run", "echo about to fail; exit 7",
                       "--socket", socket_path()},
                      ShimEnv(), kBuildTimeout, &output);
  ASSERT_TRUE(status.has_value()) << output;
  EXPECT_EQ(status->code, 7) << output;
  EXPECT_NE(output.find("about to fail"), std::string::npos) << output;
  EXPECT_NE(output.find("command 1 (echo about to fail; exit 7) exited with 7"), std::string::npos) << output;
  EXPECT_FALSE(CreateSandbox(shim, R"({"template":"e2e-cli"})").empty());

  status = RunCommand({BridgeBinary(), "template", "delete", "e2e-cli", "--socket", socket_path()}, ShimEnv(),
                      Millis(30000), &output);
  ASSERT_TRUE(status.has_value()) << output;
  EXPECT_EQ(status->code, 0) << output;
  EXPECT_NE(output.find("deleted e2e-cli"), std::string::npos) << output;
  status = RunCommand({BridgeBinary(), "template", "delete", "e2e-cli", "--socket", socket_path()}, ShimEnv(),
                      Millis(30000), &output);
  ASSERT_TRUE(status.has_value()) << output;
  EXPECT_EQ(status->code, 1) << output;
  status = RunCommand({BridgeBinary(), "template", "build", "--run", "true", "--socket", socket_path()}, ShimEnv(),
                      Millis(30000), &output);
  ASSERT_TRUE(status.has_value()) << output;
  EXPECT_EQ(status->code, 2) << output;
}

// ^C during the CLI's build cancels it: the CLI says so and exits 1, and the build's
// sandbox and snapshot are not left behind.
TEST_F(TemplatesTest, InterruptingTheBridgeCliCancelsItsBuild) {
  EppSession* shim = StartInitializedShim();  // the bridge the CLI talks to
  ASSERT_NE(shim, nullptr);
  Process::Options options;
  options.argv = {BridgeBinary(), "template", "build", "e2e-interrupted", "--from", "base", "--run",
                  "echo step-started; sleep 60", "--socket", socket_path()};
  options.env = ShimEnv();
  options.output_file = root_dir() + "/template-cli.log";
  std::string error;
  auto cli = Process::Start(options, &error);
  ASSERT_NE(cli, nullptr) << error;
  for (const auto deadline = Clock::now() + kBuildTimeout;
       Clock::now() < deadline && ReadFile(options.output_file).find("step-started") == std::string::npos;) {
    std::this_thread::sleep_for(Millis(50));
  }
  ASSERT_NE(ReadFile(options.output_file).find("step-started"), std::string::npos) << ReadFile(options.output_file);
  ASSERT_TRUE(cli->Signal(SIGINT));
  auto status = cli->WaitExit(Millis(20000));
  ASSERT_TRUE(status.has_value()) << "the CLI did not end after ^C";
  EXPECT_TRUE(status->exited && status->code == 1) << status->ToString() << " " << ReadFile(options.output_file);
  EXPECT_NE(ReadFile(options.output_file).find("cancelling..."), std::string::npos) << ReadFile(options.output_file);
  EXPECT_TRUE(NothingLeft()) << "the interrupted build left its sandbox or snapshot";
}

}  // namespace
}  // namespace abx::e2e
