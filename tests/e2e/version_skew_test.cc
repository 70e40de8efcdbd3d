// An upgrade while sessions run: a shim only ever talks to a bridge of its own build.
// "Old" is //tests/e2e/other_build (the same sources, another build id); "new" is the
// build under test. A new shim that finds the old bridge at the configured socket starts
// a bridge of its own beside it (restart reason NEW_VERSION); the old session's command
// finishes undisturbed on the old bridge, which exits once idle.

#include <signal.h>

#include <memory>
#include <string>
#include <thread>

#include <gtest/gtest.h>

#include "common/build_id.h"
#include "tests/e2e/harness.h"

namespace abx::e2e {
namespace {

constexpr int kOldIdleTimeoutS = 2;

std::string OldBridgeBinary() { return Runfile("tests/e2e/other_build", "abx-opensandbox-bridge"); }
std::string OldShimBinary() { return Runfile("tests/e2e/other_build", "abx-opensandbox-shim"); }

// The build id a binary prints with --version ("... (build ID)").
std::string BuildIdOf(const std::string& binary, const std::vector<std::string>& env) {
  std::string output;
  auto status = RunCommand({binary, "--version"}, env, Millis(5000), &output);
  if (!status || !status->exited || status->code != 0) return "";
  const size_t at = output.find("(build ");
  const size_t end = output.find(')', at);
  if (at == std::string::npos || end == std::string::npos) return "";
  return output.substr(at + 7, end - at - 7);
}

class VersionSkewTest : public TestEnv {
 protected:
  void TearDown() override {
    if (old_shim_) {
      old_shim_->CloseStdin();
      if (!old_shim_->WaitExit(Millis(3000))) ::kill(old_shim_->pid(), SIGKILL);
      if (HasFailure()) {
        std::fprintf(stderr, "--- old shim transcript ---\n%s\n--- old shim stderr ---\n%s\n",
                     old_shim_->Transcript().c_str(), old_shim_->StderrText().c_str());
      }
    }
    TestEnv::TearDown();
    // The new bridge serves a socket of its own, which the fixture does not know.
    if (!new_socket_.empty()) {
      std::string output;
      RunCommand({BridgeBinary(), "stop", "--socket", new_socket_}, ShimEnv(), Millis(5000),
                 &output);
    }
    for (pid_t pid : {old_pid_, new_pid_}) {
      if (pid > 0 && ProcessAlive(pid) && ProcessCommandLine(pid).find("serve") != std::string::npos &&
          ProcessCommandLine(pid).find(socket_dir()) != std::string::npos) {
        ::kill(pid, SIGKILL);
      }
    }
  }

  std::unique_ptr<EppSession> old_shim_;
  std::string new_socket_;
  pid_t old_pid_ = -1, new_pid_ = -1;
};

TEST_F(VersionSkewTest, NewShimGetsItsOwnBridgeWhileTheOldSessionFinishes) {
  REQUIRE_FAKE("runs two builds against the fake");
  const std::string old_id = BuildIdOf(OldShimBinary(), ShimEnv());
  ASSERT_FALSE(old_id.empty()) << OldShimBinary();
  ASSERT_EQ(BuildIdOf(OldBridgeBinary(), ShimEnv()), old_id);
  ASSERT_EQ(BuildIdOf(ShimBinary(), ShimEnv()), kBuildId);
  ASSERT_NE(old_id, kBuildId) << "the two builds have one build id";

  // The old build's session, with a command that runs for ~2 s.
  std::string error;
  old_shim_ = EppSession::Start(
      OldShimBinary(),
      ShimEnv({{"ABX_OPENSANDBOX_BRIDGE_BIN", OldBridgeBinary()},
               {"ABX_OPENSANDBOX_BRIDGE_IDLE_TIMEOUT", std::to_string(kOldIdleTimeoutS)}}),
      logs_dir() + "/old-shim.stderr", &error);
  ASSERT_NE(old_shim_, nullptr) << error;
  MessagePtr init = old_shim_->Initialize();
  ASSERT_NE(init, nullptr);
  ASSERT_FALSE(init->IsError()) << init->raw;
  const auto old_pid = BridgePid();
  ASSERT_TRUE(old_pid.has_value());
  old_pid_ = *old_pid;
  EXPECT_NE(ProcessCommandLine(old_pid_).find("other_build"), std::string::npos)
      << "the old shim's bridge is " << ProcessCommandLine(old_pid_);
  const std::string sandbox = CreateSandbox(old_shim_.get());
  ASSERT_FALSE(sandbox.empty());
  const int64_t start = old_shim_->SendRequest(
      "exec.start",
      JsonObject().Str("sandbox_id", sandbox)
          .Str("command", "for i in 1 2 3 4 5 6 7 8; do echo step$i; sleep 0.25; done; exit 3")
          .str());
  MessagePtr started = old_shim_->WaitResponse(start, Millis(20000));
  ASSERT_NE(started, nullptr);
  ASSERT_FALSE(started->IsError()) << started->raw;
  const std::string exec_id = GetString(started->result(), "exec_id");
  ASSERT_FALSE(exec_id.empty());

  // The upgrade: a new shim, same configured socket.
  EppSession* new_shim = StartShim({{"ABX_OPENSANDBOX_BRIDGE_IDLE_TIMEOUT", "30"}});
  ASSERT_NE(new_shim, nullptr);
  MessagePtr new_init = new_shim->Initialize(Millis(15000));
  ASSERT_NE(new_init, nullptr);
  ASSERT_FALSE(new_init->IsError()) << new_init->raw;
  std::string base = socket_path();
  base.resize(base.size() - std::string(".sock").size());
  new_socket_ = base + "-" + std::string(kBuildId).substr(0, 12) + ".sock";
  EXPECT_TRUE(IsSocket(new_socket_)) << "no socket at " << new_socket_;
  EXPECT_NE(new_shim->StderrText().find("NEW_VERSION"), std::string::npos)
      << new_shim->StderrText();
  const std::string lock = ReadFile(new_socket_ + ".lock");
  new_pid_ = static_cast<pid_t>(std::strtol(lock.c_str(), nullptr, 10));
  ASSERT_GT(new_pid_, 0) << "no pid in " << new_socket_ << ".lock";
  EXPECT_NE(new_pid_, old_pid_);
  EXPECT_TRUE(ProcessAlive(old_pid_));
  EXPECT_TRUE(ProcessAlive(new_pid_));
  EXPECT_EQ(BridgePid().value_or(-1), old_pid_) << "the old bridge lost its socket";
  EXPECT_EQ(ProcessCommandLine(new_pid_).find("other_build"), std::string::npos)
      << "the new shim's bridge is " << ProcessCommandLine(new_pid_);

  // The new session works on its own bridge (the same server, the same sandbox).
  MessagePtr ran = new_shim->Request(
      "exec.run", JsonObject().Str("sandbox_id", sandbox).Str("command", "echo new").str(),
      Millis(20000));
  ASSERT_NE(ran, nullptr);
  EXPECT_EQ(GetString(ran->result(), "stdout"), "new\n") << ran->raw;

  // The old session's command completes correctly on the old bridge.
  ExecTrace trace = TraceExec(old_shim_.get(), exec_id, started, Millis(20000));
  EXPECT_TRUE(trace.problems.empty()) << JoinProblems(trace);
  EXPECT_EQ(trace.stdout_data, "step1\nstep2\nstep3\nstep4\nstep5\nstep6\nstep7\nstep8\n");
  ASSERT_NE(trace.exit, nullptr);
  EXPECT_EQ(GetInt(trace.exit->params(), "exit_code", -99), 3) << trace.exit->raw;

  // Its session over, the old bridge exits after its idle timeout; the new one stays.
  old_shim_->CloseStdin();
  ASSERT_TRUE(old_shim_->WaitExit(Millis(3000)).has_value());
  const auto ended = Clock::now();
  const auto deadline = ended + Millis((kOldIdleTimeoutS + 8) * 1000);
  while (ProcessAlive(old_pid_) && Clock::now() < deadline) std::this_thread::sleep_for(Millis(50));
  EXPECT_FALSE(ProcessAlive(old_pid_))
      << "the old bridge still runs " << kOldIdleTimeoutS + 8 << " s after its last session";
  EXPECT_TRUE(ProcessAlive(new_pid_)) << "the new bridge went away with the old one";
  MessagePtr again = new_shim->Request(
      "exec.run", JsonObject().Str("sandbox_id", sandbox).Str("command", "echo still").str(),
      Millis(20000));
  ASSERT_NE(again, nullptr);
  EXPECT_EQ(GetString(again->result(), "stdout"), "still\n") << again->raw;
}

}  // namespace
}  // namespace abx::e2e
