// process.stdin end to end (docs/epp1.md §3, process.manage, "Interactive stdin"): the real
// shim and bridge against the fake (and on the real-execd tier, upstream's execd). Bytes
// written to a command started with stdin_stream reach it exactly, in call order, also when
// pipelined under load; `eof` ends its input; stdout and stderr stay apart; exactly one
// exec.exit. Every refusal the contract names, and nothing left in the sandbox (no pipe
// directory in /tmp, no holder process) after the command ends, is killed, or its session
// ends.

#include <signal.h>

#include <chrono>
#include <map>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "tests/e2e/base64_encode.h"
#include "tests/e2e/cpu_hog.h"
#include "tests/e2e/exec_trace.h"
#include "tests/e2e/harness.h"

namespace abx::e2e {
namespace {

using Clock = std::chrono::steady_clock;

class StdinTest : public TestEnv {
 protected:
  void SetUp() override {
    TestEnv::SetUp();
    shim_ = StartInitializedShim(ShimOverrides());
    ASSERT_NE(shim_, nullptr);
    sandbox_ = CreateSandbox(shim_);
    ASSERT_FALSE(sandbox_.empty());
  }
  virtual std::map<std::string, std::optional<std::string>> ShimOverrides() const { return {}; }

  // exec.start with a stdin stream; its exec_id and the start's answer.
  std::string StartPiped(const std::string& command, MessagePtr* answer = nullptr, EppSession* shim = nullptr) {
    EppSession* s = shim ? shim : shim_;
    MessagePtr r = s->Request(
        "exec.start", JsonObject().Str("sandbox_id", sandbox_).Str("command", command).Bool("stdin_stream", true).str(),
        Millis(30000));
    if (!r || r->IsError()) {
      ADD_FAILURE() << "exec.start " << command << ": " << (r ? r->raw : "no answer");
      return "";
    }
    if (answer) *answer = r;
    return GetString(r->result(), "exec_id");
  }
  std::string WriteParams(const std::string& exec_id, const std::string& data, bool eof = false,
                          bool base64 = false) {
    JsonObject params;
    params.Str("sandbox_id", sandbox_).Str("exec_id", exec_id).Str("data", base64 ? Base64(data) : data);
    if (base64) params.Str("encoding", "base64");
    if (eof) params.Bool("eof", true);
    return params.str();
  }
  MessagePtr Write(const std::string& exec_id, const std::string& data, bool eof = false, bool base64 = false,
                   EppSession* shim = nullptr) {
    MessagePtr r = (shim ? shim : shim_)->Request("process.stdin", WriteParams(exec_id, data, eof, base64), Millis(30000));
    if (!r) ADD_FAILURE() << "no answer to process.stdin";
    return r;
  }
  // stdout of a command run to its end.
  std::string Output(const std::string& command) {
    MessagePtr r = shim_->Request("exec.run", JsonObject().Str("sandbox_id", sandbox_).Str("command", command).str(),
                                  Millis(60000));
    if (!r || r->IsError()) {
      ADD_FAILURE() << command << ": " << (r ? r->raw : "no answer");
      return "";
    }
    return GetString(r->result(), "stdout");
  }
  // What there is of stdin pipes in the sandbox: pipe directories in /tmp, wrapper or
  // holder processes (their command line names the pipe's directory).
  std::string Leftovers() {
    // The needle is spelled so that the probe's own command line does not hold it, and
    // only processes of this sandbox count (the fake runs every sandbox on this host,
    // each chrooted in its own directory).
    return Output("n=.abx-std; n=${n}in-; ls -a /tmp | grep -F \"$n\"; "
                  "for p in /proc/[0-9]*; do [ \"$p/root\" -ef / ] || continue; "
                  "tr '\\0' ' ' < $p/cmdline 2>/dev/null | grep -F \"$n\" && echo; done; true");
  }
  void ExpectNothingLeft() {
    std::string left;
    for (const auto deadline = Clock::now() + Millis(10000); Clock::now() < deadline;) {
      left = Leftovers();
      if (left.empty()) return;
      std::this_thread::sleep_for(Millis(100));
    }
    ADD_FAILURE() << "left in the sandbox: " << left;
  }
  void ExpectError(const MessagePtr& r, const std::string& epp_code, const std::string& words) {
    ASSERT_NE(r, nullptr);
    ASSERT_TRUE(r->IsError()) << r->raw;
    EXPECT_EQ(r->EppCode(), epp_code) << r->raw;
    EXPECT_NE(r->ErrorMessage().find(words), std::string::npos) << r->raw;
  }

  EppSession* shim_ = nullptr;
  std::string sandbox_;
};

TEST_F(StdinTest, LinesWrittenToCatComeBackAndEofEndsIt) {
  MessagePtr started;
  const std::string exec_id = StartPiped("cat", &started);
  ASSERT_FALSE(exec_id.empty());
  MessagePtr w = Write(exec_id, "hello\n");
  ASSERT_NE(w, nullptr);
  ASSERT_FALSE(w->IsError()) << w->raw;
  EXPECT_EQ(GetInt(w->result(), "written", -1), 6) << w->raw;
  // The echo comes back while the pipe is still open.
  MessagePtr echo = shim_->WaitNotification(exec_id, "exec.output", Millis(10000));
  ASSERT_NE(echo, nullptr) << "cat did not echo the line";
  EXPECT_EQ(GetString(echo->params(), "data"), "hello\n") << echo->raw;
  w = Write(exec_id, "world\n", true);
  ASSERT_NE(w, nullptr);
  ASSERT_FALSE(w->IsError()) << w->raw;
  ExecTrace trace = TraceExec(shim_, exec_id, started);
  EXPECT_TRUE(trace.problems.empty()) << JoinProblems(trace);
  ASSERT_NE(trace.exit, nullptr);
  EXPECT_EQ(GetInt(trace.exit->params(), "exit_code", -1), 0) << trace.exit->raw;
  EXPECT_EQ(trace.stdout_data, "hello\nworld\n");
  EXPECT_EQ(trace.stderr_data, "") << "the pipe's announcement is not the command's output";
  ExpectNothingLeft();
}

TEST_F(StdinTest, BinaryBytesArriveExactlyAndEofAloneEndsTheInput) {
  // Every byte value, in three writes, read back as hex by od (coreutils).
  std::string bytes;
  for (int i = 0; i < 256; ++i) bytes.push_back(static_cast<char>(i));
  const std::string exec_id = StartPiped("od -An -tx1 -v | tr -d ' \\n'");
  ASSERT_FALSE(exec_id.empty());
  for (const std::string& part : {bytes.substr(0, 10), bytes.substr(10, 200), bytes.substr(210)}) {
    MessagePtr w = Write(exec_id, part, false, true);
    ASSERT_NE(w, nullptr);
    ASSERT_FALSE(w->IsError()) << w->raw;
    EXPECT_EQ(GetInt(w->result(), "written", -1), static_cast<int64_t>(part.size()));
  }
  MessagePtr eof = shim_->Request("process.stdin",
                                  JsonObject().Str("sandbox_id", sandbox_).Str("exec_id", exec_id).Bool("eof", true).str(),
                                  Millis(30000));
  ASSERT_NE(eof, nullptr);
  ASSERT_FALSE(eof->IsError()) << eof->raw;
  EXPECT_EQ(GetInt(eof->result(), "written", -1), 0);
  ExecTrace trace = TraceExec(shim_, exec_id, nullptr);
  ASSERT_NE(trace.exit, nullptr);
  std::string hex;
  for (int i = 0; i < 256; ++i) {
    static const char digits[] = "0123456789abcdef";
    hex += digits[i >> 4];
    hex += digits[i & 15];
  }
  EXPECT_EQ(trace.stdout_data, hex + "\n");
}

TEST_F(StdinTest, StdoutAndStderrStayApartAndTheExitCodeIsTheCommands) {
  const std::string exec_id =
      StartPiped("while read -r line; do echo \"out $line\"; echo \"err $line\" >&2; done; exit 7");
  ASSERT_FALSE(exec_id.empty());
  MessagePtr w = Write(exec_id, "a\nb\n", true);
  ASSERT_NE(w, nullptr);
  ASSERT_FALSE(w->IsError()) << w->raw;
  ExecTrace trace = TraceExec(shim_, exec_id, nullptr);
  EXPECT_TRUE(trace.problems.empty()) << JoinProblems(trace);
  ASSERT_NE(trace.exit, nullptr);
  EXPECT_EQ(GetInt(trace.exit->params(), "exit_code", -1), 7) << trace.exit->raw;
  EXPECT_EQ(trace.stdout_data, "out a\nout b\n");
  EXPECT_EQ(trace.stderr_data, "err a\nerr b\n");
  ExpectNothingLeft();
}

TEST_F(StdinTest, PipelinedWritesKeepTheirOrderUnderLoad) {
  CpuHog hog;
  const std::string exec_id = StartPiped("cat");
  ASSERT_FALSE(exec_id.empty());
  // Sent without waiting for answers: the bridge must write them in the order they came.
  std::vector<int64_t> ids;
  std::string expected;
  for (int i = 0; i < 60; ++i) {
    const std::string line = "line " + std::to_string(i) + "\n";
    expected += line;
    ids.push_back(shim_->SendRequest("process.stdin", WriteParams(exec_id, line, i == 59)));
  }
  for (int64_t id : ids) {
    MessagePtr r = shim_->WaitResponse(id, Millis(60000));
    ASSERT_NE(r, nullptr);
    ASSERT_FALSE(r->IsError()) << r->raw;
  }
  ExecTrace trace = TraceExec(shim_, exec_id, nullptr, Millis(30000));
  ASSERT_NE(trace.exit, nullptr);
  EXPECT_EQ(trace.stdout_data, expected);
}

TEST_F(StdinTest, WritesTheContractRefuses) {
  // A command without a stdin stream.
  MessagePtr plain = shim_->Request(
      "exec.start", JsonObject().Str("sandbox_id", sandbox_).Str("command", "sleep 20").str(), Millis(30000));
  ASSERT_NE(plain, nullptr);
  ASSERT_FALSE(plain->IsError()) << plain->raw;
  const std::string plain_id = GetString(plain->result(), "exec_id");
  ExpectError(Write(plain_id, "x"), "E8007", "without stdin_stream");
  shim_->Request("process.kill", JsonObject().Str("sandbox_id", sandbox_).Str("exec_id", plain_id).str());

  // An exec_id nobody knows.
  ExpectError(Write("0123456789abcdef0123456789abcdef", "x"), "E8005", "no command");

  // Closed, then exited.
  const std::string exec_id = StartPiped("cat >/dev/null; sleep 1");
  ASSERT_FALSE(exec_id.empty());
  MessagePtr w = Write(exec_id, "", true);
  ASSERT_NE(w, nullptr);
  ASSERT_FALSE(w->IsError()) << w->raw;
  ExpectError(Write(exec_id, "late"), "E8007", "is closed");
  ASSERT_NE(shim_->WaitExecExit(exec_id, Millis(20000)), nullptr);
  ExpectError(Write(exec_id, "later"), "E8007", "has exited");

  // Options that cannot go together.
  auto start = [&](const std::string& method, const std::string& extra) {
    std::string params = JsonObject().Str("sandbox_id", sandbox_).Str("command", "cat").Bool("stdin_stream", true).str();
    params = params.substr(0, params.size() - 1) + "," + extra + "}";
    return shim_->Request(method, params, Millis(30000));
  };
  MessagePtr r = start("exec.start", "\"stdin\":\"x\"");
  ASSERT_NE(r, nullptr);
  EXPECT_EQ(r->ErrorCode(), -32602) << r->raw;
  r = start("exec.start", "\"detached\":true");
  ASSERT_NE(r, nullptr);
  EXPECT_EQ(r->ErrorCode(), -32602) << r->raw;
  r = start("exec.run", "\"timeout\":5");
  ASSERT_NE(r, nullptr);
  EXPECT_EQ(r->ErrorCode(), -32602) << r->raw;
  MessagePtr bad = shim_->Request("process.stdin",
                                  JsonObject().Str("sandbox_id", sandbox_).Str("exec_id", exec_id).Str("data", "%%")
                                      .Str("encoding", "base64").str());
  ASSERT_NE(bad, nullptr);
  EXPECT_EQ(bad->ErrorCode(), -32602) << bad->raw;
}

TEST_F(StdinTest, AKilledCommandLeavesNothingBehind) {
  const std::string exec_id = StartPiped("cat");
  ASSERT_FALSE(exec_id.empty());
  MessagePtr w = Write(exec_id, "one\n");
  ASSERT_NE(w, nullptr);
  ASSERT_FALSE(w->IsError()) << w->raw;
  EXPECT_FALSE(Leftovers().empty()) << "the probe does not see a running command's pipe";
  MessagePtr killed = shim_->Request("process.kill", JsonObject().Str("sandbox_id", sandbox_).Str("exec_id", exec_id).str(),
                                     Millis(30000));
  ASSERT_NE(killed, nullptr);
  EXPECT_TRUE(GetBool(killed->result(), "killed")) << killed->raw;
  ASSERT_NE(shim_->WaitExecExit(exec_id, Millis(20000)), nullptr);
  ExpectError(Write(exec_id, "two\n"), "E8007", "has exited");
  ExpectNothingLeft();
}

TEST_F(StdinTest, TheSessionsEndKillsTheCommandAndLeavesNothing) {
  EppSession* other = StartInitializedShim();
  ASSERT_NE(other, nullptr);
  const std::string exec_id = StartPiped("cat", nullptr, other);
  ASSERT_FALSE(exec_id.empty());
  MessagePtr w = Write(exec_id, "one\n", false, false, other);
  ASSERT_NE(w, nullptr);
  ASSERT_FALSE(w->IsError()) << w->raw;
  other->CloseStdin();
  ASSERT_TRUE(other->WaitExit(Millis(5000)).has_value());
  ExpectNothingLeft();
  // Another session may still not write to it: the command is gone.
  ExpectError(Write(exec_id, "two\n"), "E8007", "has exited");
}

TEST_F(StdinTest, AnotherSessionWritesToTheSameCommand) {
  const std::string exec_id = StartPiped("cat");
  ASSERT_FALSE(exec_id.empty());
  EppSession* other = StartInitializedShim();
  ASSERT_NE(other, nullptr);
  MessagePtr w = Write(exec_id, "from elsewhere\n", true, false, other);
  ASSERT_NE(w, nullptr);
  ASSERT_FALSE(w->IsError()) << w->raw;
  ExecTrace trace = TraceExec(shim_, exec_id, nullptr);
  ASSERT_NE(trace.exit, nullptr);
  EXPECT_EQ(trace.stdout_data, "from elsewhere\n");
}

// The same with a 6 s lease (ABX_OPENSANDBOX_BRIDGE_SANDBOX_LEASE): the bridge's pings
// keep a pipe open past it, and a bridge that is gone leaves the command at end of file.
class StdinLeaseTest : public StdinTest {
 protected:
  std::map<std::string, std::optional<std::string>> ShimOverrides() const override {
    return {{"ABX_OPENSANDBOX_BRIDGE_SANDBOX_LEASE", "6"}};
  }
};

TEST_F(StdinLeaseTest, PingsKeepAPipeOpenPastItsLease) {
  MessagePtr started;
  const std::string exec_id = StartPiped("cat", &started);
  ASSERT_FALSE(exec_id.empty());
  std::this_thread::sleep_for(Millis(9000));
  MessagePtr w = Write(exec_id, "after 9 s\n", true);
  ASSERT_NE(w, nullptr);
  ASSERT_FALSE(w->IsError()) << w->raw;
  ExecTrace trace = TraceExec(shim_, exec_id, started);
  ASSERT_NE(trace.exit, nullptr);
  EXPECT_EQ(trace.stdout_data, "after 9 s\n");
  EXPECT_EQ(GetInt(trace.exit->params(), "exit_code", -1), 0) << trace.exit->raw;
  ExpectNothingLeft();
}

// The bridge is killed while its command waits for input: no ping comes, and within the
// lease the command reads end of file after what it was given, ends by itself (not
// killed: it writes its last file) and leaves nothing of its pipe.
TEST_F(StdinLeaseTest, ABridgeKilledLeavesTheCommandAtEndOfFileWithinItsLease) {
  const std::string exec_id = StartPiped("cat > /tmp/lease-in; echo done > /tmp/lease-done");
  ASSERT_FALSE(exec_id.empty());
  MessagePtr w = Write(exec_id, "given\n");
  ASSERT_NE(w, nullptr);
  ASSERT_FALSE(w->IsError()) << w->raw;
  auto bridge = BridgePid();
  ASSERT_TRUE(bridge.has_value());
  ASSERT_EQ(::kill(*bridge, SIGKILL), 0);
  const auto killed = Clock::now();
  std::string done;
  while (Clock::now() - killed < Millis(30000) && done != "done\n") {
    std::this_thread::sleep_for(Millis(500));
    // A new bridge serves this; a request in flight as the old one died is an error.
    MessagePtr r = shim_->Request(
        "exec.run", JsonObject().Str("sandbox_id", sandbox_).Str("command", "cat /tmp/lease-done 2>/dev/null; true").str(),
        Millis(10000));
    done = r && !r->IsError() ? GetString(r->result(), "stdout") : "";
  }
  EXPECT_EQ(done, "done\n") << "the command did not reach end of file";
  EXPECT_EQ(Output("cat /tmp/lease-in"), "given\n");
  ExpectNothingLeft();
}

}  // namespace
}  // namespace abx::e2e
