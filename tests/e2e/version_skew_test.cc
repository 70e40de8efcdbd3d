// An upgrade while sessions run: a shim only ever talks to a bridge of its own build.
// "Old" is //tests/e2e/other_build (the same sources, another build id); "new" is the
// build under test. A new shim that finds the old bridge at the configured socket starts
// a bridge of its own beside it (restart reason NEW_VERSION); the old session's command
// finishes undisturbed on the old bridge, which exits once idle.

#include <signal.h>

#include <map>
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

// Two builds' bridges with a warm pool each, on one server: each pool's sandboxes carry
// its own build's key, and neither bridge hands out the other's (docs/epp1.md §3).
TEST_F(VersionSkewTest, TwoBuildsWarmPoolsNeverTakeEachOthersSandboxes) {
  REQUIRE_FAKE("runs two builds against the fake");
  const std::map<std::string, std::optional<std::string>> pool = {{"ABX_OPENSANDBOX_POOL", "base=1"},
                                                                  {"ABX_OPENSANDBOX_BRIDGE_IDLE_TIMEOUT", "30"}};
  std::string error;
  auto old_env = pool;
  old_env["ABX_OPENSANDBOX_BRIDGE_BIN"] = OldBridgeBinary();
  old_shim_ = EppSession::Start(OldShimBinary(), ShimEnv(old_env), logs_dir() + "/old-shim.stderr", &error);
  ASSERT_NE(old_shim_, nullptr) << error;
  MessagePtr init = old_shim_->Initialize();
  ASSERT_FALSE(init->IsError()) << init->raw;
  old_pid_ = BridgePid().value_or(-1);
  EppSession* new_shim = StartShim(pool);
  ASSERT_NE(new_shim, nullptr);
  MessagePtr new_init = new_shim->Initialize(Millis(15000));
  ASSERT_FALSE(new_init->IsError()) << new_init->raw;
  std::string base = socket_path();
  base.resize(base.size() - std::string(".sock").size());
  new_socket_ = base + "-" + std::string(kBuildId).substr(0, 12) + ".sock";
  new_pid_ = static_cast<pid_t>(std::strtol(ReadFile(new_socket_ + ".lock").c_str(), nullptr, 10));

  auto ready = [](EppSession* shim) {
    MessagePtr info = shim->Request("provider.info", "{}");
    return info && !info->IsError() ? GetInt(info->result(), "pool.base.ready", -1) : -1;
  };
  const auto deadline = Clock::now() + Millis(30000);
  while (Clock::now() < deadline && (ready(old_shim_.get()) != 1 || ready(new_shim) != 1)) {
    std::this_thread::sleep_for(Millis(100));
  }
  ASSERT_EQ(ready(old_shim_.get()), 1);
  ASSERT_EQ(ready(new_shim), 1);
  // Two pooled sandboxes on the server, under two keys.
  MessagePtr listed = new_shim->Request("sandbox.list", "{}");
  std::map<std::string, std::string> key_of;  // id -> abx-pool
  for (const auto& s : listed->result()["sandboxes"].GetArray()) {
    if (s["metadata"].IsObject() && s["metadata"].HasMember("abx-pool")) {
      key_of[s["id"].GetString()] = s["metadata"]["abx-pool"].GetString();
    }
  }
  ASSERT_EQ(key_of.size(), 2u) << listed->raw;
  EXPECT_NE(key_of.begin()->second, key_of.rbegin()->second);

  // Each build takes its own.
  MessagePtr from_new = new_shim->Request("sandbox.create", "{}", Millis(30000));
  ASSERT_FALSE(from_new->IsError()) << from_new->raw;
  EXPECT_TRUE(from_new->result()["pooled"].IsTrue()) << from_new->raw;
  MessagePtr from_old = old_shim_->Request("sandbox.create", "{}", Millis(30000));
  ASSERT_FALSE(from_old->IsError()) << from_old->raw;
  EXPECT_TRUE(from_old->result()["pooled"].IsTrue()) << from_old->raw;
  const std::string new_id = GetString(from_new->result(), "id"), old_id = GetString(from_old->result(), "id");
  ASSERT_TRUE(key_of.count(new_id) && key_of.count(old_id));
  EXPECT_NE(new_id, old_id);
  EXPECT_NE(key_of[new_id], key_of[old_id]);
}

}  // namespace
}  // namespace abx::e2e
