// The wrapper that gives a command a stdin stream (bridge/core/exec/stdin_pipe_script.h), run by
// real shells (bash, as execd runs commands, and dash, a plain POSIX sh) the way the
// bridge drives it: writes are opens of the holder's /proc descriptor, as execd's upload
// makes them, end of file is a line to its other descriptor. Bytes arrive exactly and in
// order, end of file ends the command's input, its exit code comes through, and nothing
// stays: no directory in /tmp, no holder. A wrapper killed alone (execd before 1.0.18)
// leaves its command at end of file rather than fed for ever, and so does a lease that runs
// out without the bridge's pings.

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <random>
#include <string>
#include <thread>

#include <gtest/gtest.h>

#include "bridge/core/exec/stdin_pipe_script.h"

namespace abx::core {
namespace {

constexpr char kTag[] = "0123456789abcdef";

// A random tag per wrapper: tests that run at once (each in a PID namespace of its own,
// so with the same pid) must not share a directory in /tmp.
std::string FreshTag() {
  std::random_device random;
  char tag[32];
  snprintf(tag, sizeof tag, "%08x%08x", random(), random());
  return tag;
}

std::string ReadAll(int fd) {
  std::string out;
  char buffer[4096];
  ssize_t n;
  while ((n = read(fd, buffer, sizeof buffer)) > 0) out.append(buffer, static_cast<size_t>(n));
  return out;
}

bool Exists(const std::string& path) {
  struct stat st;
  return stat(path.c_str(), &st) == 0;
}

// A process that is listed and not a zombie.
bool Running(int pid) {
  // read(2), not a stream: a process that ends between the open and the read is an error
  // (ESRCH) that a stream throws.
  const int fd = open(("/proc/" + std::to_string(pid) + "/stat").c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  const std::string text = ReadAll(fd);
  close(fd);
  const size_t paren = text.rfind(')');
  return paren != std::string::npos && paren + 2 < text.size() && text[paren + 2] != 'Z';
}

// The wrapper of `command` under `shell`, its stdout and stderr pipes.
class Wrapper {
 public:
  // `path`: the PATH the wrapper runs with (empty: this process's).
  Wrapper(const std::string& shell, const std::string& command, int lease_s = 90, const std::string& path = "") {
    int out[2], err[2];
    EXPECT_EQ(pipe(out), 0);
    EXPECT_EQ(pipe(err), 0);
    const std::string script = StdinPipeCommand(command, tag_, lease_s);
    pid_ = fork();
    if (pid_ == 0) {
      dup2(out[1], 1);
      dup2(err[1], 2);
      close(out[0]);
      close(err[0]);
      close(out[1]);
      close(err[1]);
      if (!path.empty()) setenv("PATH", path.c_str(), 1);
      execl(shell.c_str(), shell.c_str(), "-c", script.c_str(), static_cast<char*>(nullptr));
      _exit(127);
    }
    close(out[1]);
    close(err[1]);
    out_ = out[0];
    err_ = err[0];
    // The announcement: the first stderr line.
    std::string line;
    char c;
    while (read(err_, &c, 1) == 1 && c != '\n') line.push_back(c);
    holder_ = StdinPipeHolder(line, tag_).value_or(0);
    EXPECT_GT(holder_, 0) << "first stderr line: " << line;
  }
  ~Wrapper() {
    if (pid_ > 0 && !reaped_) {
      kill(pid_, SIGKILL);
      waitpid(pid_, nullptr, 0);
    }
    close(out_);
    close(err_);
  }

  // As an upload writes: open the path write-only, write, close.
  bool WriteTo(const std::string& path, const std::string& bytes) {
    const int fd = open(path.c_str(), O_WRONLY | O_TRUNC | O_CLOEXEC);
    if (fd < 0) return false;
    const bool ok = write(fd, bytes.data(), bytes.size()) == static_cast<ssize_t>(bytes.size());
    close(fd);
    return ok;
  }
  bool Write(const std::string& bytes) { return WriteTo(StdinDataPath(holder_), bytes); }
  bool Eof() { return WriteTo(StdinEofPath(holder_), "\n"); }
  bool Ping() { return WriteTo(StdinEofPath(holder_), kStdinPingLine); }

  // The command's stdout, its exit code (-1: not a normal exit).
  std::string Finish(int* exit_code) {
    std::string out = ReadAll(out_);
    int status = 0;
    waitpid(pid_, &status, 0);
    reaped_ = true;
    *exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    return out;
  }
  std::string Stderr() { return ReadAll(err_); }
  // One line of the command's stdout, without its newline.
  std::string StdoutLine() {
    std::string line;
    char c;
    while (read(out_, &c, 1) == 1 && c != '\n') line.push_back(c);
    return line;
  }

  int pid() const { return pid_; }
  const std::string& tag() const { return tag_; }
  int holder() const { return holder_; }

 private:
  const std::string tag_ = FreshTag();
  int pid_ = -1;
  int out_ = -1;
  int err_ = -1;
  int holder_ = 0;
  bool reaped_ = false;
};

class StdinPipeScriptTest : public ::testing::TestWithParam<const char*> {
 protected:
  void SetUp() override {
    if (access(GetParam(), X_OK) != 0) GTEST_SKIP() << GetParam() << " is not installed";
  }
};

TEST_P(StdinPipeScriptTest, BytesArriveInOrderAndEofEndsTheInput) {
  Wrapper w(GetParam(), "od -An -tx1 -v | tr -d ' \\n'; exit 3");
  ASSERT_GT(w.holder(), 0);
  EXPECT_FALSE(Exists("/tmp/.abx-stdin-" + w.tag())) << "the pipe's directory stays";
  std::string bytes;
  for (int i = 0; i < 256; ++i) bytes.push_back(static_cast<char>(i));
  ASSERT_TRUE(w.Write(bytes.substr(0, 100)));
  ASSERT_TRUE(w.Write(bytes.substr(100)));
  ASSERT_TRUE(w.Eof());
  int code = 0;
  const std::string out = w.Finish(&code);
  std::string hex;
  for (int i = 0; i < 256; ++i) {
    static const char digits[] = "0123456789abcdef";
    hex += digits[i >> 4];
    hex += digits[i & 15];
  }
  EXPECT_EQ(out, hex);
  EXPECT_EQ(code, 3);
  EXPECT_EQ(w.Stderr(), "") << "nothing but the announcement on stderr";
  EXPECT_FALSE(Running(w.holder())) << "the holder outlives its wrapper";
}

TEST_P(StdinPipeScriptTest, ACommandThatNeverReadsEndsAndTakesItsHolder) {
  Wrapper w(GetParam(), "echo quick; exit 0");
  ASSERT_GT(w.holder(), 0);
  int code = -1;
  EXPECT_EQ(w.Finish(&code), "quick\n");
  EXPECT_EQ(code, 0);
  EXPECT_FALSE(Running(w.holder()));
  EXPECT_FALSE(w.Write("late")) << "a write after the end found the pipe";
}

TEST_P(StdinPipeScriptTest, AnExitOrExecInTheCommandStillReapsTheHolder) {
  Wrapper w(GetParam(), "exec cat");
  ASSERT_GT(w.holder(), 0);
  ASSERT_TRUE(w.Write("through exec\n"));
  ASSERT_TRUE(w.Eof());
  int code = -1;
  EXPECT_EQ(w.Finish(&code), "through exec\n");
  EXPECT_EQ(code, 0);
  EXPECT_FALSE(Running(w.holder()));
}

TEST_P(StdinPipeScriptTest, AWrapperKilledAloneLeavesItsCommandAtEndOfFile) {
  // execd before 1.0.18 signals only the command's leader: the wrapper.
  Wrapper w(GetParam(), "echo started; cat > /dev/null; echo fed-and-done");
  ASSERT_GT(w.holder(), 0);
  ASSERT_TRUE(w.Write("some input\n"));
  ASSERT_EQ(w.StdoutLine(), "started");  // the command runs: the wrapper waits for it
  kill(w.pid(), SIGTERM);
  int code = 0;
  // cat is the wrapper's subshell's child: with the holder gone it reads end of file and
  // its echo still reaches the (shared) stdout.
  EXPECT_EQ(w.Finish(&code), "fed-and-done\n");
  EXPECT_EQ(code, -1);
  bool holder_gone = false;
  for (int i = 0; i < 200 && !holder_gone; ++i) {
    holder_gone = !Running(w.holder());
    if (!holder_gone) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_TRUE(holder_gone);
}

// The bridge that started the command is gone: no ping comes, and once the lease has run
// out the command reads end of file after what it was given.
TEST_P(StdinPipeScriptTest, WithoutPingsTheLeaseEndsTheInput) {
  Wrapper w(GetParam(), "cat; echo after-eof", 1);
  ASSERT_GT(w.holder(), 0);
  ASSERT_TRUE(w.Write("given\n"));
  const auto start = std::chrono::steady_clock::now();
  int code = -1;
  EXPECT_EQ(w.Finish(&code), "given\nafter-eof\n");
  EXPECT_EQ(code, 0);
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(10));
  EXPECT_FALSE(Running(w.holder()));
}

// Pings keep the pipe open past its lease, and one that comes after end of file is
// harmless.
TEST_P(StdinPipeScriptTest, PingsKeepThePipeOpenPastItsLease) {
  Wrapper w(GetParam(), "cat", 1);
  ASSERT_GT(w.holder(), 0);
  ASSERT_TRUE(w.Write("first\n"));
  for (int i = 0; i < 10; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    ASSERT_TRUE(w.Ping());
  }
  ASSERT_TRUE(w.Write("after 3 s\n")) << "the pipe closed with pings coming";
  ASSERT_TRUE(w.Eof());
  w.Ping();  // may find the holder gone already
  int code = -1;
  EXPECT_EQ(w.Finish(&code), "first\nafter 3 s\n");
  EXPECT_EQ(code, 0);
  EXPECT_FALSE(Running(w.holder()));
}

// Without a `timeout` that works (an old busybox's takes -t) the pipe has no lease, and
// the bridge's pings, which come all the same, are skipped rather than read as end of file.
TEST_P(StdinPipeScriptTest, WithoutTimeoutPingsAreSkipped) {
  char dir[] = "/tmp/abx-no-timeout-XXXXXX";
  ASSERT_NE(mkdtemp(dir), nullptr);
  for (const char* tool : {"mkdir", "mkfifo", "rm", "cat"}) {
    ASSERT_EQ(symlink((std::string("/bin/") + tool).c_str(), (std::string(dir) + "/" + tool).c_str()), 0);
  }
  {
    Wrapper w(GetParam(), "cat", 1, dir);
    ASSERT_GT(w.holder(), 0);
    ASSERT_TRUE(w.Write("before\n"));
    for (int i = 0; i < 5; ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(300));
      ASSERT_TRUE(w.Ping());
    }
    ASSERT_TRUE(w.Write("after pings\n")) << "a ping closed the pipe";
    ASSERT_TRUE(w.Eof());
    int code = -1;
    EXPECT_EQ(w.Finish(&code), "before\nafter pings\n");
    EXPECT_EQ(code, 0);
  }
  std::system(("rm -rf '" + std::string(dir) + "'").c_str());
}

TEST(StdinPipeHolderTest, OnlyTheAnnouncementForItsTagNamesAHolder) {
  EXPECT_EQ(StdinPipeHolder("abx-stdin 0123456789abcdef 4242", kTag), 4242);
  EXPECT_FALSE(StdinPipeHolder("abx-stdin 0123456789abcdee 4242", kTag));
  EXPECT_FALSE(StdinPipeHolder("abx-stdin 0123456789abcdef", kTag));
  EXPECT_FALSE(StdinPipeHolder("abx-stdin 0123456789abcdef 42x", kTag));
  EXPECT_FALSE(StdinPipeHolder("abx-stdin 0123456789abcdef 0", kTag));
  EXPECT_FALSE(StdinPipeHolder("mkdir: cannot create directory", kTag));
  EXPECT_EQ(StdinDataPath(7), "/proc/7/fd/6");
  EXPECT_EQ(StdinEofPath(7), "/proc/7/fd/0");
}

INSTANTIATE_TEST_SUITE_P(Shells, StdinPipeScriptTest, ::testing::Values("/bin/bash", "/bin/dash"),
                         [](const ::testing::TestParamInfo<const char*>& info) {
                           return std::string(info.param).substr(5);
                         });

}  // namespace
}  // namespace abx::core
