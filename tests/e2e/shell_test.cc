// exec.shell end to end (docs/epp1.md §3): the real shim and bridge against the fake,
// whose shells are execd's bash sessions run by real bash. State kept from command to
// command, execd's framing with each line's "\n" back, the options a shell refuses, one
// command at a time in arrival order, and a cancel, a timeout, process.kill and
// shell.close that end a command and everything it started while the shell lives on
// with its earlier state and no trace of the bridge's tag. Shells made without keep go
// with their session; kept ones do not. An execd from before the session API is E8007.

#include <unistd.h>

#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "tests/e2e/cpu_hog.h"
#include "tests/e2e/harness.h"

namespace abx::e2e {
namespace {

using Clock = std::chrono::steady_clock;

class ShellTest : public TestEnv {
 protected:
  void SetUp() override {
    TestEnv::SetUp();
    REQUIRE_EXECD("1.0.9", "shells");
    ASSERT_TRUE(StartShimWithSandbox(&shim_, &sandbox_));
  }

  std::string NewShell(EppSession* shim, const std::string& extra = "") {
    std::string params = JsonObject().Str("sandbox_id", sandbox_).str();
    if (!extra.empty()) params = params.substr(0, params.size() - 1) + "," + extra + "}";
    MessagePtr r = shim->Request("shell.create", params, Millis(30000));
    if (!r || r->IsError()) {
      ADD_FAILURE() << "shell.create: " << (r ? r->raw : "no answer");
      return "";
    }
    return GetString(r->result(), "shell_id");
  }
  std::string RunParams(const std::string& shell, const std::string& command, const std::string& extra = "") {
    std::string params = JsonObject().Str("sandbox_id", sandbox_).Str("shell_id", shell).Str("command", command).str();
    if (!extra.empty()) params = params.substr(0, params.size() - 1) + "," + extra + "}";
    return params;
  }
  MessagePtr Run(const std::string& shell, const std::string& command, const std::string& extra = "",
                 EppSession* shim = nullptr) {
    MessagePtr r = (shim ? shim : shim_)->Request("exec.run", RunParams(shell, command, extra), Millis(60000));
    if (!r) ADD_FAILURE() << "no answer to exec.run " << command;
    return r;
  }
  // stdout of a command that must succeed.
  std::string Output(const std::string& shell, const std::string& command) {
    MessagePtr r = Run(shell, command);
    if (!r || r->IsError() || GetInt(r->result(), "exit_code", -1) != 0) {
      ADD_FAILURE() << command << ": " << (r ? r->raw : "no answer");
      return "";
    }
    return GetString(r->result(), "stdout");
  }
  // exec.start in the shell; its exec_id.
  std::string Start(const std::string& shell, const std::string& command, int64_t* request_id = nullptr) {
    const int64_t id = shim_->SendRequest("exec.start", RunParams(shell, command));
    if (request_id) *request_id = id;
    MessagePtr r = shim_->WaitResponse(id, Millis(30000));
    if (!r || r->IsError()) {
      ADD_FAILURE() << "exec.start " << command << ": " << (r ? r->raw : "no answer");
      return "";
    }
    return GetString(r->result(), "exec_id");
  }
  // "sleep 30N.<pid>7": the fake runs every sandbox on this host, so a listing also shows
  // other tests' processes; this one is ours alone.
  static std::string UniqueSleep(int n) {
    return "sleep 30" + std::to_string(n) + "." + std::to_string(::getpid()) + "7";
  }
  // None of the sandbox's processes runs `needle`, and (on the fake) no session run holds
  // its output pipe open any more.
  void ExpectGone(const std::string& needle) {
    MessagePtr listed = shim_->Request("process.list", JsonObject().Str("sandbox_id", sandbox_).str(), Millis(30000));
    ASSERT_NE(listed, nullptr);
    ASSERT_FALSE(listed->IsError()) << listed->raw;
    const rapidjson::Value* processes = Find(listed->result(), "processes");
    ASSERT_TRUE(processes && processes->IsArray());
    for (const rapidjson::Value& process : processes->GetArray()) {
      EXPECT_EQ(GetString(process, "command").find(needle), std::string::npos)
          << "a process of the ended command lives on: " << ToJson(process);
    }
    if (live() || !RealExecdTier().empty()) return;  // the count is the fake execd's
    int64_t active = -1;
    for (int i = 0; i < 50; ++i) {
      auto stats = fake().Stats();
      ASSERT_TRUE(stats.has_value());
      active = stats->session_runs_active;
      if (active == 0) break;
      std::this_thread::sleep_for(Millis(100));
    }
    EXPECT_EQ(active, 0) << "a session run of the fake still has its output pipe open";
  }
  // The shell's saved environment as execd itself runs it, without the bridge's wrapper.
  std::string ShellEnvAtExecd(const std::string& shell) {
    HttpResponse r = fake().Http("POST", "/v1/sandboxes/" + sandbox_ + "/proxy/44772/session/" + shell + "/run",
                                 R"({"command":"env"})", Millis(20000));
    EXPECT_EQ(r.status, 200) << r.body;
    return r.body;
  }

  EppSession* shim_ = nullptr;
  std::string sandbox_;
};

TEST_F(ShellTest, DirectoryAndExportsCarryOverAndLinesGetTheirNewlineBack) {
  const std::string shell = NewShell(shim_);
  ASSERT_FALSE(shell.empty());
  EXPECT_EQ(Output(shell, "cd /tmp && export A=1 && B=2"), "");
  EXPECT_EQ(Output(shell, "pwd; echo \"$A,${B:-unexported}\""), "/tmp\n1,unexported\n");

  // execd's framing: stderr comes as stdout, blank lines are dropped, a lone \r stays.
  MessagePtr r = Run(shell, "echo out; echo err >&2; echo; printf 'a\\rb\\n'; printf 'no newline'");
  ASSERT_NE(r, nullptr);
  ASSERT_FALSE(r->IsError()) << r->raw;
  EXPECT_EQ(GetString(r->result(), "stdout"), "out\nerr\na\rb\nno newline\n");
  EXPECT_EQ(GetString(r->result(), "stderr"), "");

  // A failing command is its exit code; the shell goes on.
  r = Run(shell, "false");
  ASSERT_NE(r, nullptr);
  EXPECT_EQ(GetInt(r->result(), "exit_code", -1), 1) << r->raw;
  // A syntax error is that command's, and the state stays.
  r = Run(shell, "if then fi");
  ASSERT_NE(r, nullptr);
  EXPECT_NE(GetInt(r->result(), "exit_code", 0), 0) << r->raw;
  EXPECT_EQ(Output(shell, "echo $A; pwd"), "1\n/tmp\n");

  // exec.start streams the same lines, in order, with the shell's exec_id.
  const std::string exec_id = Start(shell, "echo one; echo two");
  ASSERT_FALSE(exec_id.empty());
  MessagePtr exit = shim_->WaitExecExit(exec_id, Millis(30000));
  ASSERT_NE(exit, nullptr);
  EXPECT_EQ(GetInt(exit->params(), "exit_code", -1), 0) << exit->raw;
  std::string streamed;
  for (const MessagePtr& n : shim_->Notifications(exec_id)) {
    if (n->method() == "exec.output") streamed += GetString(n->params(), "data");
  }
  EXPECT_EQ(streamed, "one\ntwo\n");
}

TEST_F(ShellTest, ItsDirectoryIsMadeAndACommandsCwdSticks) {
  const std::string dir = "/tmp/abx-shell-" + std::to_string(::getpid()) + "/a/b";
  const std::string shell = NewShell(shim_, "\"cwd\":" + JsonQuote(dir));
  ASSERT_FALSE(shell.empty());
  EXPECT_EQ(Output(shell, "pwd"), dir + "\n");
  MessagePtr r = Run(shell, "pwd", "\"cwd\":\"/\"");
  ASSERT_NE(r, nullptr);
  EXPECT_EQ(GetString(r->result(), "stdout"), "/\n") << r->raw;
  EXPECT_EQ(Output(shell, "pwd"), "/\n");
  // A cwd that does not exist fails that command, as `cd` would, and moves nothing.
  r = Run(shell, "echo ran", "\"cwd\":\"/no/such/dir\"");
  ASSERT_NE(r, nullptr);
  ASSERT_FALSE(r->IsError()) << r->raw;
  EXPECT_NE(GetInt(r->result(), "exit_code", 0), 0);
  EXPECT_EQ(GetString(r->result(), "stdout").find("ran"), std::string::npos) << r->raw;
  EXPECT_EQ(Output(shell, "pwd"), "/\n");
}

TEST_F(ShellTest, OptionsAShellCannotHonourAreE8004AndAnUnknownShellE8005) {
  const std::string shell = NewShell(shim_);
  ASSERT_FALSE(shell.empty());
  const std::pair<const char*, const char*> refused[] = {
      {"env", "\"env\":{\"A\":\"1\"}"}, {"user", "\"user\":\"root\""}, {"stdin", "\"stdin\":\"x\""}};
  for (const auto& [field, extra] : refused) {
    MessagePtr r = Run(shell, "true", extra);
    ASSERT_NE(r, nullptr);
    EXPECT_EQ(r->EppCode(), "E8004") << r->raw;
    EXPECT_EQ(GetString(r->error(), "data.field"), field) << r->raw;
  }
  MessagePtr r = shim_->Request("exec.start", RunParams(shell, "true", "\"detached\":true"));
  ASSERT_NE(r, nullptr);
  EXPECT_EQ(r->EppCode(), "E8004") << r->raw;
  EXPECT_EQ(GetString(r->error(), "data.field"), "detached") << r->raw;

  r = Run("no-such-shell", "true");
  ASSERT_NE(r, nullptr);
  EXPECT_EQ(r->EppCode(), "E8005") << r->raw;
  r = Run("", "true");
  ASSERT_NE(r, nullptr);
  EXPECT_EQ(r->ErrorCode(), -32602) << r->raw;
}

TEST_F(ShellTest, CommandsOfOneShellRunOneAtATimeInArrivalOrder) {
  const std::string shell = NewShell(shim_);
  ASSERT_FALSE(shell.empty());
  // Were they run at once, the second would print before the first and the last to end
  // (the first) would decide the shell's state.
  const int64_t first = shim_->SendRequest("exec.run", RunParams(shell, "sleep 1; export ORDER=first; echo first"));
  std::this_thread::sleep_for(Millis(100));
  const int64_t second = shim_->SendRequest("exec.run", RunParams(shell, "echo \"second after $ORDER\"; export ORDER=second"));
  MessagePtr a = shim_->WaitResponse(first, Millis(30000));
  MessagePtr b = shim_->WaitResponse(second, Millis(30000));
  ASSERT_TRUE(a && b);
  EXPECT_EQ(GetString(a->result(), "stdout"), "first\n") << a->raw;
  EXPECT_EQ(GetString(b->result(), "stdout"), "second after first\n") << b->raw;
  EXPECT_LT(a->index, b->index);
  EXPECT_EQ(Output(shell, "echo $ORDER"), "second\n");
}

// Commands sent back to back, without waiting for answers, run in the order sent, also
// on a loaded machine.
TEST_F(ShellTest, PipelinedCommandsKeepTheirOrderUnderLoad) {
  const std::string shell = NewShell(shim_);
  ASSERT_FALSE(shell.empty());
  CpuHog hog;
  ASSERT_GT(hog.running(), 0);
  constexpr int kCommands = 100;
  constexpr size_t kInFlight = 60;  // a shell queues at most 64 commands
  std::vector<int64_t> ids;
  size_t answered = 0;
  auto answer_next = [&] {
    MessagePtr r = shim_->WaitResponse(ids[answered++], Millis(120000));
    ASSERT_NE(r, nullptr) << "no answer to request " << ids[answered - 1];
    EXPECT_FALSE(r->IsError()) << r->raw;
  };
  std::string expected;
  for (int i = 0; i < kCommands; ++i) {
    while (ids.size() - answered + 1 > kInFlight) answer_next();
    ids.push_back(shim_->SendRequest("exec.run", RunParams(shell, "ORDER=\"$ORDER " + std::to_string(i) + "\"; export ORDER")));
    expected += " " + std::to_string(i);
  }
  while (answered < ids.size()) answer_next();
  EXPECT_EQ(Output(shell, "echo \"$ORDER\""), expected + "\n");
}

TEST_F(ShellTest, CancelEndsTheCommandAndWhatItStartedButNotTheShell) {
  const std::string shell = NewShell(shim_);
  ASSERT_FALSE(shell.empty());
  EXPECT_EQ(Output(shell, "cd /tmp && export KEPT=1"), "");
  const std::string daemon = UniqueSleep(1), foreground = UniqueSleep(2);
  int64_t request = 0;
  const std::string exec_id =
      Start(shell, "cd / && export LOST=1 && (" + daemon + " &) ; echo started; " + foreground + "; echo never", &request);
  ASSERT_FALSE(exec_id.empty());
  ASSERT_NE(shim_->WaitNotification(exec_id, "exec.output", Millis(10000)), nullptr);
  const auto sent = Clock::now();
  ASSERT_TRUE(shim_->Notify("$/cancel", JsonObject().Int("id", request).str()));
  MessagePtr exit = shim_->WaitExecExit(exec_id, Millis(20000));
  ASSERT_NE(exit, nullptr);
  EXPECT_LT(Clock::now() - sent, std::chrono::seconds(5));
  EXPECT_TRUE(GetBool(exit->params(), "cancelled")) << exit->raw;
  EXPECT_TRUE(IsNull(exit->params(), "exit_code")) << exit->raw;
  EXPECT_EQ(GetString(exit->params(), "signal"), "SIGKILL") << exit->raw;

  ExpectGone(daemon);
  ExpectGone(foreground);
  // The shell lives, with the state from before the cancelled command.
  EXPECT_EQ(Output(shell, "echo \"$KEPT,${LOST:-lost}\"; pwd"), "1,lost\n/tmp\n");
  if (!live()) {
    EXPECT_EQ(ShellEnvAtExecd(shell).find("ABX_EXEC_TAG"), std::string::npos);
  }
}

TEST_F(ShellTest, ATimeoutEndsTheCommandAndKeepsTheShell) {
  const std::string shell = NewShell(shim_);
  ASSERT_FALSE(shell.empty());
  const std::string sleeper = UniqueSleep(3);
  const auto sent = Clock::now();
  MessagePtr r = Run(shell, "export LOST=1; " + sleeper, "\"timeout\":1");
  ASSERT_NE(r, nullptr);
  ASSERT_FALSE(r->IsError()) << r->raw;
  EXPECT_TRUE(GetBool(r->result(), "timed_out")) << r->raw;
  EXPECT_TRUE(IsNull(r->result(), "exit_code")) << r->raw;
  EXPECT_LT(Clock::now() - sent, std::chrono::seconds(6));
  ExpectGone(sleeper);
  EXPECT_EQ(Output(shell, "echo ${LOST:-lost}"), "lost\n");
}

TEST_F(ShellTest, ProcessKillEndsTheCommandNeverTheShell) {
  const std::string shell = NewShell(shim_);
  ASSERT_FALSE(shell.empty());
  EXPECT_EQ(Output(shell, "export KEPT=1"), "");
  const std::string sleeper = UniqueSleep(4);
  const std::string exec_id = Start(shell, "echo started; " + sleeper);
  ASSERT_FALSE(exec_id.empty());
  ASSERT_NE(shim_->WaitNotification(exec_id, "exec.output", Millis(10000)), nullptr);

  // process.list names the command's processes by its exec_id, as for any command. The
  // output only says `echo` ran: the shell may not have started the sleep yet, so the
  // listing is asked again until the sleep is in it.
  bool listed_sleep = false, named = false;
  for (const auto deadline = Clock::now() + Millis(10000); !listed_sleep && Clock::now() < deadline;) {
    MessagePtr listed = shim_->Request("process.list", JsonObject().Str("sandbox_id", sandbox_).str(), Millis(30000));
    ASSERT_NE(listed, nullptr);
    ASSERT_FALSE(listed->IsError()) << listed->raw;
    for (const rapidjson::Value& process : Find(listed->result(), "processes")->GetArray()) {
      if (GetString(process, "command").find(sleeper) != std::string::npos) {
        listed_sleep = true;
        named = GetString(process, "exec_id") == exec_id;
      }
    }
    if (!listed_sleep) std::this_thread::sleep_for(Millis(50));
  }
  ASSERT_TRUE(listed_sleep) << "the sleep never showed in process.list";
  EXPECT_TRUE(named) << "the sleep is not listed with exec_id " << exec_id;

  MessagePtr killed = shim_->Request("process.kill", JsonObject().Str("sandbox_id", sandbox_).Str("exec_id", exec_id).str(),
                                     Millis(30000));
  ASSERT_NE(killed, nullptr);
  EXPECT_TRUE(GetBool(killed->result(), "killed")) << killed->raw;
  MessagePtr exit = shim_->WaitExecExit(exec_id, Millis(10000));
  ASSERT_NE(exit, nullptr);
  EXPECT_EQ(GetString(exit->params(), "signal"), "SIGKILL") << exit->raw;
  EXPECT_FALSE(GetBool(exit->params(), "cancelled")) << exit->raw;
  ExpectGone(sleeper);
  EXPECT_EQ(Output(shell, "echo $KEPT"), "1\n");

  killed = shim_->Request("process.kill", JsonObject().Str("sandbox_id", sandbox_).Str("exec_id", exec_id).str());
  ASSERT_NE(killed, nullptr);
  EXPECT_FALSE(GetBool(killed->result(), "killed", true)) << killed->raw;
}

TEST_F(ShellTest, ACommandThatExitsKeepsNothingAndTheTagNeverStays) {
  const std::string shell = NewShell(shim_);
  ASSERT_FALSE(shell.empty());
  EXPECT_EQ(Output(shell, "export KEPT=1"), "");
  MessagePtr r = Run(shell, "cd /tmp; export LOST=1; exit 3");
  ASSERT_NE(r, nullptr);
  EXPECT_EQ(GetInt(r->result(), "exit_code", -1), 3) << r->raw;
  EXPECT_EQ(Output(shell, "echo \"$KEPT,${LOST:-lost}\"; pwd"), "1,lost\n/\n");
  if (!live()) {
    EXPECT_EQ(ShellEnvAtExecd(shell).find("ABX_EXEC_TAG"), std::string::npos);
  }
}

TEST_F(ShellTest, ClosingAShellEndsItsCommand) {
  const std::string shell = NewShell(shim_);
  ASSERT_FALSE(shell.empty());
  const std::string sleeper = UniqueSleep(5);
  const std::string exec_id = Start(shell, "echo started; " + sleeper);
  ASSERT_FALSE(exec_id.empty());
  ASSERT_NE(shim_->WaitNotification(exec_id, "exec.output", Millis(10000)), nullptr);
  MessagePtr closed = shim_->Request("shell.close", JsonObject().Str("sandbox_id", sandbox_).Str("shell_id", shell).str());
  ASSERT_NE(closed, nullptr);
  EXPECT_TRUE(GetBool(closed->result(), "closed")) << closed->raw;
  MessagePtr exit = shim_->WaitExecExit(exec_id, Millis(10000));
  ASSERT_NE(exit, nullptr);
  EXPECT_EQ(GetString(exit->params(), "signal"), "SIGKILL") << exit->raw;
  ExpectGone(sleeper);
  closed = shim_->Request("shell.close", JsonObject().Str("sandbox_id", sandbox_).Str("shell_id", shell).str());
  ASSERT_NE(closed, nullptr);
  EXPECT_FALSE(GetBool(closed->result(), "closed", true)) << closed->raw;
  MessagePtr r = Run(shell, "true");
  ASSERT_NE(r, nullptr);
  EXPECT_EQ(r->EppCode(), "E8005") << r->raw;
}

// execd runs every shell command from a script file in /tmp that it never removes, with
// an `export` line per variable of the shell: the command removes it first, so neither
// the file nor an exported secret stays in the sandbox.
TEST_F(ShellTest, NoScriptFileAndNoExportedSecretStayInTmp) {
  const std::string shell = NewShell(shim_);
  ASSERT_FALSE(shell.empty());
  const std::string secret = "s3cret-" + std::to_string(::getpid());
  Output(shell, "export API_TOKEN=" + secret);
  EXPECT_EQ(Output(shell, "echo $API_TOKEN"), secret + "\n");
  Output(shell, "cd /tmp && true");
  MessagePtr listed = shim_->Request(
      "exec.run",
      JsonObject().Str("sandbox_id", sandbox_)
          .Str("command", "ls -a /tmp; grep -rqF -- " + secret + " /tmp 2>/dev/null && echo SECRET-ON-DISK; true")
          .str(),
      Millis(30000));
  ASSERT_NE(listed, nullptr);
  ASSERT_FALSE(listed->IsError()) << listed->raw;
  const std::string out = GetString(listed->result(), "stdout");
  EXPECT_EQ(out.find("execd_bash_"), std::string::npos) << out;
  EXPECT_EQ(out.find("SECRET-ON-DISK"), std::string::npos) << out;
}

TEST_F(ShellTest, ShellsWithoutKeepGoWithTheirSessionKeptOnesStay) {
  EppSession* first = StartInitializedShim();
  ASSERT_NE(first, nullptr);
  const std::string passing = NewShell(first);
  const std::string kept = NewShell(first, "\"keep\":true");
  ASSERT_FALSE(passing.empty() || kept.empty());
  EXPECT_EQ(Output(kept, "export K=kept"), "");
  first->CloseStdin();
  ASSERT_TRUE(first->WaitExit(Millis(20000)).has_value());

  MessagePtr r = Run(passing, "true");
  ASSERT_NE(r, nullptr);
  EXPECT_EQ(r->EppCode(), "E8005") << r->raw;
  EXPECT_EQ(Output(kept, "echo $K"), "kept\n");
  MessagePtr closed = shim_->Request("shell.close", JsonObject().Str("sandbox_id", sandbox_).Str("shell_id", kept).str());
  ASSERT_NE(closed, nullptr);
  EXPECT_TRUE(GetBool(closed->result(), "closed")) << closed->raw;
}

TEST_F(ShellTest, AnExecdWithoutTheShellApiIsE8007) {
  REQUIRE_FAKE("an old execd");
  REQUIRE_FAKE_EXECD("execd 1.0.8 and 1.0.7, older than the real binaries");
  for (const char* version : {"1.0.8", "1.0.7"}) {
    ASSERT_TRUE(RestartFake({"--execd-version", version}));
    EppSession* shim = nullptr;
    std::string sandbox;
    ASSERT_TRUE(StartShimWithSandbox(&shim, &sandbox));
    MessagePtr created = shim->Request("shell.create", JsonObject().Str("sandbox_id", sandbox).str());
    ASSERT_NE(created, nullptr);
    MessagePtr failed = created;
    if (!created->IsError()) {  // 1.0.8 has sessions, with another run request
      failed = shim->Request("exec.run", JsonObject()
                                             .Str("sandbox_id", sandbox)
                                             .Str("shell_id", GetString(created->result(), "shell_id"))
                                             .Str("command", "true")
                                             .str());
      ASSERT_NE(failed, nullptr);
    }
    EXPECT_EQ(failed->EppCode(), "E8007") << version << ": " << failed->raw;
    EXPECT_NE(failed->ErrorMessage().find("too old"), std::string::npos) << failed->raw;
  }
}

}  // namespace
}  // namespace abx::e2e
