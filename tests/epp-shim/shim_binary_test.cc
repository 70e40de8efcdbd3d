// The shim as abx runs it: the real binary, stdin/stdout pipes, a bridge it starts
// itself (the fake bridge, through ABX_OPENSANDBOX_BRIDGE_BIN).

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "common/build_id.h"
#include "common/line_reader.h"
#include "common/platform.h"
#include "gtest/gtest.h"
#include "tests/epp-shim/shim_test_util.h"

namespace abx::testing {
namespace {

std::string ShimBinary() {
  return std::string(getenv("TEST_SRCDIR")) + "/" + getenv("TEST_WORKSPACE") +
         "/epp-shim/abx-opensandbox-shim";
}

// A running shim with its three standard streams on pipes.
class ShimProcess {
 public:
  ShimProcess(const std::vector<std::string>& args, const std::vector<std::string>& env) {
    int in[2], out[2], err[2];
    if (pipe2(in, O_CLOEXEC) || pipe2(out, O_CLOEXEC) || pipe2(err, O_CLOEXEC)) abort();
    std::vector<std::string> argv = {ShimBinary()};
    argv.insert(argv.end(), args.begin(), args.end());
    std::vector<char*> arg_ptrs, env_ptrs;
    for (auto& a : argv) arg_ptrs.push_back(const_cast<char*>(a.c_str()));
    arg_ptrs.push_back(nullptr);
    for (auto& e : env) env_ptrs.push_back(const_cast<char*>(e.c_str()));
    env_ptrs.push_back(nullptr);
    pid_ = fork();
    if (pid_ == 0) {
      dup2(in[0], 0);
      dup2(out[1], 1);
      dup2(err[1], 2);
      execve(arg_ptrs[0], arg_ptrs.data(), env_ptrs.data());
      _exit(127);
    }
    close(in[0]);
    close(out[1]);
    close(err[1]);
    stdin_ = in[1];
    stdout_ = out[0];
    stderr_ = err[0];
    reader_ = std::make_unique<LineReader>(stdout_);
    // A hung shim must fail the test, not stall it: kill it after a generous while,
    // which ends its stdout and so any ReadLine.
    watchdog_ = std::thread([this] {
      std::unique_lock<std::mutex> lock(mu_);
      if (!cv_.wait_for(lock, std::chrono::seconds(30), [this] { return finished_; })) {
        kill(pid_, SIGKILL);
      }
    });
  }
  ~ShimProcess() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      finished_ = true;
    }
    cv_.notify_all();
    watchdog_.join();
    CloseStdin();
    if (pid_ > 0 && !reaped_) {
      kill(pid_, SIGKILL);
      waitpid(pid_, nullptr, 0);
    }
    close(stdout_);
    close(stderr_);
  }
  void Send(const std::string& line) {
    std::string framed = line + "\n";
    ASSERT_TRUE(WriteAll(stdin_, framed.data(), framed.size()));
  }
  // The next stdout line; empty on end of output.
  std::string ReadLine() {
    FramedLine line;
    return reader_->Next(&line) ? line.data : std::string();
  }
  void CloseStdin() {
    if (stdin_ >= 0) close(stdin_);
    stdin_ = -1;
  }
  // Waits for the process to end; returns its exit code (-1 on timeout or signal).
  int Wait(int timeout_ms) {
    const int64_t deadline = MonotonicMillis() + timeout_ms;
    while (MonotonicMillis() < deadline) {
      int status;
      if (waitpid(pid_, &status, WNOHANG) == pid_) {
        reaped_ = true;
        return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
      }
      usleep(5000);
    }
    return -1;
  }
  std::string Stderr() {
    std::string text;
    char buffer[4096];
    pollfd entry{stderr_, POLLIN, 0};
    while (poll(&entry, 1, 0) > 0) {
      ssize_t got = read(stderr_, buffer, sizeof(buffer));
      if (got <= 0) break;
      text.append(buffer, static_cast<size_t>(got));
    }
    return text;
  }

 private:
  pid_t pid_ = -1;
  bool reaped_ = false;
  int stdin_ = -1, stdout_ = -1, stderr_ = -1;
  std::unique_ptr<LineReader> reader_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool finished_ = false;
  std::thread watchdog_;
};

class ShimBinaryTest : public ::testing::Test {
 protected:
  std::vector<std::string> Environment() const {
    return {
        "PATH=/usr/bin:/bin",
        "HOME=" + dir_.path(),
        "ABX_OPENSANDBOX_BRIDGE_SOCKET=" + dir_.path() + "/b.sock",
        "ABX_OPENSANDBOX_BRIDGE_BIN=" + FakeBridgeBinary(),
        std::string("FAKE_BRIDGE_BUILD_ID=") + kBuildId,
        "ABX_OPENSANDBOX_API_KEY=do-not-leak",
    };
  }
  ShortTempDir dir_;
};

TEST_F(ShimBinaryTest, VersionNamesBuild) {
  ShimProcess shim({"--version"}, Environment());
  const std::string line = shim.ReadLine();
  EXPECT_EQ(shim.Wait(5000), 0);
  EXPECT_NE(line.find("abx-opensandbox-shim"), std::string::npos) << line;
  EXPECT_NE(line.find(kBuildId), std::string::npos) << line;
}

TEST_F(ShimBinaryTest, UnknownFlagIsAUsageError) {
  ShimProcess shim({"--bogus"}, Environment());
  EXPECT_EQ(shim.Wait(5000), 2);
  EXPECT_NE(shim.Stderr().find("unknown argument --bogus"), std::string::npos);
}

TEST_F(ShimBinaryTest, SessionStartsBridgeAndEndsAtEndOfInput) {
  ShimProcess shim({}, Environment());
  shim.Send(R"({"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocol":"EPP/1"}})");
  EXPECT_EQ(shim.ReadLine(), R"({"jsonrpc":"2.0","id":1,"result":{"protocol":"EPP/1","replayed":false}})");
  shim.Send(R"({"jsonrpc":"2.0","id":2,"method":"test.env"})");
  const std::string env_line = shim.ReadLine();
  EXPECT_NE(env_line.find(R"("secret_vars":0)"), std::string::npos) << env_line;
  shim.CloseStdin();
  const int64_t start = MonotonicMillis();
  EXPECT_EQ(shim.Wait(3000), 0);
  EXPECT_LT(MonotonicMillis() - start, 2000) << "EPP/1 wants an exit within 2 s of end of stdin";
  EXPECT_EQ(shim.ReadLine(), "") << "nothing but answers on stdout";
  const std::string err = shim.Stderr();
  EXPECT_NE(err.find("restart reason NOT_RUNNING"), std::string::npos) << err;
  EXPECT_EQ(err.find("do-not-leak"), std::string::npos) << err;
}

TEST_F(ShimBinaryTest, ExitNotificationEndsTheProcess) {
  ShimProcess shim({}, Environment());
  shim.Send(R"({"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocol":"EPP/1"}})");
  EXPECT_FALSE(shim.ReadLine().empty());
  shim.Send(R"({"jsonrpc":"2.0","method":"exit"})");
  EXPECT_EQ(shim.Wait(3000), 0) << "stdin is still open: the exit came from the bridge";
}

TEST_F(ShimBinaryTest, CrashedBridgeIsReplacedAndTheSessionGoesOn) {
  ShimProcess shim({}, Environment());
  shim.Send(R"({"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocol":"EPP/1"}})");
  EXPECT_FALSE(shim.ReadLine().empty());
  shim.Send(R"({"jsonrpc":"2.0","id":2,"method":"test.hang"})");
  shim.Send(R"({"jsonrpc":"2.0","id":3,"method":"test.crash"})");
  std::vector<std::string> answers = {shim.ReadLine(), shim.ReadLine()};
  for (const std::string& answer : answers) {
    EXPECT_NE(answer.find(R"("code":-32001)"), std::string::npos) << answer;
    EXPECT_NE(answer.find(R"("epp_code":"E8002")"), std::string::npos) << answer;
  }
  EXPECT_NE(answers[0], answers[1]);
  shim.Send(R"({"jsonrpc":"2.0","id":4,"method":"after.crash"})");
  const std::string after = shim.ReadLine();
  EXPECT_NE(after.find(R"("id":4)"), std::string::npos) << after;
  EXPECT_NE(after.find(R"("replayed":true)"), std::string::npos) << after;
  shim.CloseStdin();
  EXPECT_EQ(shim.Wait(3000), 0);
  const std::string err = shim.Stderr();
  EXPECT_NE(err.find("restart reason STALE_SOCKET"), std::string::npos) << err;
}

TEST_F(ShimBinaryTest, SecondShimReusesTheBridge) {
  {
    ShimProcess first({}, Environment());
    first.Send(R"({"jsonrpc":"2.0","id":1,"method":"test.env"})");
    EXPECT_FALSE(first.ReadLine().empty());
    first.CloseStdin();
    EXPECT_EQ(first.Wait(3000), 0);
  }
  ShimProcess second({}, Environment());
  second.Send(R"({"jsonrpc":"2.0","id":1,"method":"m"})");
  EXPECT_NE(second.ReadLine().find(R"("session":2)"), std::string::npos);
  second.CloseStdin();
  EXPECT_EQ(second.Wait(3000), 0);
  EXPECT_EQ(second.Stderr().find("restart reason"), std::string::npos);
}

}  // namespace
}  // namespace abx::testing
