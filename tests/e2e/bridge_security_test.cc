// The bridge serves only its own user. With the socket's directory and the socket opened
// up by mistake, a process of another uid can reach the socket; the bridge must still
// refuse it (SO_PEERCRED on each accepted connection), on a socket it bound and on one
// inherited through socket activation alike, and say so in its log.
//
// Exercising this needs a second uid: the test switches a forked child to 65534 (nobody),
// which only root may do. Run as another user, the tests are skipped.

#include <fcntl.h>
#include <grp.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "tests/e2e/activated_bridge.h"
#include "tests/e2e/harness.h"

namespace abx::e2e {
namespace {

constexpr uid_t kOtherUid = 65534;

// What a process of kOtherUid saw at the bridge's socket.
struct OtherUserAttempt {
  std::string transcript;  // "raw: ..." line, then the output of `bridge status`
  std::optional<ExitStatus> status;
};

class BridgeSecurityTest : public TestEnv {
 protected:
  void SetUp() override {
    if (::geteuid() != 0) {
      GTEST_SKIP() << "needs root to connect as another uid (setuid " << kOtherUid
                   << "); skipped, not passed";
    }
    TestEnv::SetUp();
  }

  // The misconfiguration: the socket's directory and the socket open to everyone, and
  // a copy of the bridge binary the other uid can run (runfiles may sit below a private
  // home). Undone by CloseUp().
  void OpenUp() {
    const std::string bin_dir = root_dir() + "/bin";
    ASSERT_EQ(::mkdir(bin_dir.c_str(), 0755), 0);
    other_binary_ = bin_dir + "/abx-opensandbox-bridge";
    std::error_code ec;
    std::filesystem::copy_file(BridgeBinary(), other_binary_, ec);
    ASSERT_FALSE(ec) << "copy " << BridgeBinary() << ": " << ec.message();
    ASSERT_EQ(::chmod(other_binary_.c_str(), 0755), 0);
    ASSERT_EQ(::chmod(root_dir().c_str(), 0711), 0);
    ASSERT_EQ(::chmod(socket_dir().c_str(), 0777), 0);
    ASSERT_EQ(::chmod(socket_path().c_str(), 0666), 0);
  }
  void CloseUp() {
    ::chmod(socket_path().c_str(), 0600);
    ::chmod(socket_dir().c_str(), 0700);
    ::chmod(root_dir().c_str(), 0700);
  }

  // A child that becomes kOtherUid, connects to the socket and sends the HTTP/2 preface
  // (reporting whether the bridge closed the connection), then runs `bridge status`
  // (a real gRPC call).
  OtherUserAttempt ConnectAsOtherUser() {
    OtherUserAttempt attempt;
    const std::string out_path = logs_dir() + "/other-user.out";
    int out = ::open(out_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (out < 0) {
      ADD_FAILURE() << "open " << out_path;
      return attempt;
    }
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    std::strncpy(addr.sun_path, socket_path().c_str(), sizeof addr.sun_path - 1);
    std::vector<std::string> args = {other_binary_, "status", "--socket", socket_path()};
    std::vector<char*> argv;
    for (std::string& arg : args) argv.push_back(arg.data());
    argv.push_back(nullptr);
    std::string path_env = "PATH=/usr/bin:/bin";
    char* envp[] = {path_env.data(), nullptr};
    static const char kPreface[] = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";

    const pid_t pid = fork();
    if (pid < 0) {
      ADD_FAILURE() << "fork";
      ::close(out);
      return attempt;
    }
    if (pid == 0) {
      // Only async-signal-safe calls from here to exec.
      auto say = [&](const char* text) { (void)!::write(out, text, std::strlen(text)); };
      ::dup2(out, 1);
      ::dup2(out, 2);
      if (::setgroups(0, nullptr) != 0 || ::setgid(kOtherUid) != 0 || ::setuid(kOtherUid) != 0) {
        say("raw: cannot become the other uid\n");
        _exit(126);
      }
      int fd = ::socket(AF_UNIX, SOCK_STREAM, 0);
      if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
        say("raw: connect failed\n");
      } else {
        (void)!::write(fd, kPreface, sizeof kPreface - 1);
        pollfd p = {fd, POLLIN, 0};
        char byte;
        if (::poll(&p, 1, 3000) <= 0) {
          say("raw: still open after 3 s\n");
        } else if (::read(fd, &byte, 1) > 0) {
          say("raw: the bridge answered\n");
        } else {
          say("raw: closed by the bridge\n");
        }
      }
      ::close(fd);
      ::execve(argv[0], argv.data(), envp);
      say("raw: cannot exec the bridge binary\n");
      _exit(127);
    }
    ::close(out);
    int raw = 0;
    const auto deadline = Clock::now() + Millis(15000);
    pid_t done = 0;
    while ((done = ::waitpid(pid, &raw, WNOHANG)) == 0 && Clock::now() < deadline) {
      std::this_thread::sleep_for(Millis(20));
    }
    if (done != pid) {
      ::kill(pid, SIGKILL);
      ::waitpid(pid, &raw, 0);
    } else {
      ExitStatus status;
      status.exited = WIFEXITED(raw);
      status.code = status.exited ? WEXITSTATUS(raw) : 0;
      status.signal = WIFSIGNALED(raw) ? WTERMSIG(raw) : 0;
      attempt.status = status;
    }
    attempt.transcript = ReadFile(out_path);
    return attempt;
  }

  // The bridge's log lines saying it refused kOtherUid, parsed.
  std::vector<std::unique_ptr<rapidjson::Document>> RefusalLines() {
    std::vector<std::unique_ptr<rapidjson::Document>> out;
    std::istringstream lines(ReadFile(bridge_log_path()));
    std::string line;
    while (std::getline(lines, line)) {
      auto doc = std::make_unique<rapidjson::Document>();
      std::string error;
      if (!ParseJson(line, doc.get(), &error)) continue;
      if (GetString(*doc, "event") == "bridge.peer_refused" &&
          GetString(*doc, "uid") == std::to_string(kOtherUid)) {
        out.push_back(std::move(doc));
      }
    }
    return out;
  }

  void ExpectRefused(const OtherUserAttempt& attempt) {
    EXPECT_NE(attempt.transcript.find("raw: closed by the bridge"), std::string::npos)
        << attempt.transcript;
    ASSERT_TRUE(attempt.status.has_value()) << "the other user's `status` hung";
    EXPECT_TRUE(attempt.status->exited && attempt.status->code == 1)
        << attempt.status->ToString() << ": " << attempt.transcript;
    EXPECT_NE(attempt.transcript.find("no bridge answers"), std::string::npos)
        << attempt.transcript;
    EXPECT_EQ(attempt.transcript.find("\"pid\""), std::string::npos)
        << "the other user got the bridge's stats: " << attempt.transcript;
    auto refused = RefusalLines();
    ASSERT_FALSE(refused.empty()) << "no bridge.peer_refused line for uid " << kOtherUid << ":\n"
                                  << ReadFile(bridge_log_path());
    EXPECT_EQ(GetString(*refused[0], "level"), "error");
    EXPECT_NE(GetString(*refused[0], "error").find("uid " + std::to_string(kOtherUid)),
              std::string::npos);
  }

  // Another uid's attempt on the socket `shim` is connected to is refused, and
  // the bridge goes on serving its own user through that same session.
  void ExpectOtherUserRefusedWhileServing(EppSession* shim) {
    OpenUp();
    OtherUserAttempt attempt = ConnectAsOtherUser();
    CloseUp();
    ExpectRefused(attempt);

    MessagePtr listed = shim->Request("sandbox.list", "{}");
    ASSERT_NE(listed, nullptr);
    EXPECT_FALSE(listed->IsError()) << listed->raw;
  }

  std::string other_binary_;
};

TEST_F(BridgeSecurityTest, AnotherUidIsRefusedByAShimStartedBridge) {
  EppSession* shim = StartInitializedShim();
  ASSERT_NE(shim, nullptr);
  ExpectOtherUserRefusedWhileServing(shim);
  EppSession* second = StartInitializedShim();
  ASSERT_NE(second, nullptr);
}

TEST_F(BridgeSecurityTest, AnotherUidIsRefusedOnAnActivatedSocket) {
  std::string error;
  auto bridge = ActivatedBridge::Start(BridgeBinary(), socket_path(), ShimEnv(),
                                       bridge_log_path(), &error);
  ASSERT_NE(bridge, nullptr) << error;
  EppSession* shim = StartInitializedShim();
  ASSERT_NE(shim, nullptr);
  ExpectOtherUserRefusedWhileServing(shim);
  shim->CloseStdin();
  shim->WaitExit(Millis(3000));
}

}  // namespace
}  // namespace abx::e2e
