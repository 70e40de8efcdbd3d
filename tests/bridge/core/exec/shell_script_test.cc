// The wrapper of a shell command and the script that ends one (bridge/core/exec/shell_script.h),
// run by real bash the way execd runs a session's command: the header names the bash
// that runs it, the command's processes carry the tag, `cd` and `export` stay in that
// bash, the exit code survives, and the tag is gone before execd saves the state. The
// end script kills the header's bash (only while its start time matches) and every
// tagged process.

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <chrono>
#include <cstdio>
#include <string>
#include <thread>

#include <gtest/gtest.h>

#include "bridge/core/exec/shell_script.h"

namespace abx::core {
namespace {

// Output of `bash -c script`, stderr included.
std::string RunBash(const std::string& script, int* exit_code = nullptr) {
  char path[] = "/tmp/abx-shell-script-XXXXXX";
  const int fd = mkstemp(path);
  EXPECT_GE(fd, 0);
  EXPECT_EQ(write(fd, script.data(), script.size()), static_cast<ssize_t>(script.size()));
  close(fd);
  FILE* pipe = popen(("bash --noprofile --norc " + std::string(path) + " 2>&1").c_str(), "r");
  std::string out;
  std::array<char, 4096> buffer;
  size_t n;
  while ((n = fread(buffer.data(), 1, buffer.size(), pipe)) > 0) out.append(buffer.data(), n);
  const int status = pclose(pipe);
  unlink(path);
  if (exit_code) *exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return out;
}

// What execd does around a session's command (docs/opensandbox.md §2.15), reduced to
// what the wrapper must survive: the command, then its exit code and `export -p`.
std::string AsExecdRunsIt(const std::string& command) {
  return command +
         "\n__rc=$?\necho \"rc=$__rc\"\nexport -p | grep -c -e ABX_EXEC_TAG -e __abx || true\npwd\necho \"A=$A\"\n";
}

pid_t SpawnBash(const std::string& script, const char* tag) {
  const pid_t pid = fork();
  if (pid == 0) {
    if (tag) setenv("ABX_EXEC_TAG", tag, 1);
    execl("/bin/bash", "bash", "--noprofile", "--norc", "-c", script.c_str(), static_cast<char*>(nullptr));
    _exit(127);
  }
  return pid;
}

// Whether `pid` ended (reaped) within `seconds`; a signal's number in *signal.
bool Ended(pid_t pid, int seconds, int* signal) {
  for (int i = 0; i < seconds * 20; ++i) {
    int status = 0;
    if (waitpid(pid, &status, WNOHANG) == pid) {
      *signal = WIFSIGNALED(status) ? WTERMSIG(status) : 0;
      return true;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return false;
}

TEST(ShellScriptTest, TheCommandRunsInTheSameBashTaggedAndTheTagIsGoneAfter) {
  const std::string script = ShellRunScript(
      "0123abcd", "cd /tmp && export A=1; echo \"in=$ABX_EXEC_TAG\"; bash -c 'echo \"child=$ABX_EXEC_TAG\"'; (exit 7)", "");
  int code = -1;
  const std::string out = RunBash(AsExecdRunsIt(script), &code);
  EXPECT_EQ(code, 0);
  const size_t nl = out.find('\n');
  ASSERT_NE(nl, std::string::npos);
  auto header = ParseShellRunHeader(out.substr(0, nl));
  ASSERT_TRUE(header.has_value()) << out;
  EXPECT_GT(header->pid, 1);
  EXPECT_FALSE(header->start_time.empty()) << out;
  EXPECT_EQ(out.substr(nl + 1), "in=0123abcd\nchild=0123abcd\nrc=7\n0\n/tmp\nA=1\n");
}

TEST(ShellScriptTest, CwdIsACdThatStaysAndASyntaxErrorIsTheCommands) {
  std::string out = RunBash(AsExecdRunsIt(ShellRunScript("t", "export A=2", "/tmp")));
  EXPECT_NE(out.find("rc=0\n0\n/tmp\nA=2\n"), std::string::npos) << out;
  out = RunBash(AsExecdRunsIt(ShellRunScript("t", "echo ran", "/no/such/dir")));
  EXPECT_EQ(out.find("ran"), std::string::npos) << out;
  EXPECT_NE(out.find("rc=1\n0\n"), std::string::npos) << out;
  // Quotes of every kind reach bash as written; a last line ending in a backslash
  // does not swallow the clean-up.
  out = RunBash(AsExecdRunsIt(ShellRunScript("t", "echo 'it'\\''s' \"$((1+1))\" \\$HOME\necho end \\", "")));
  EXPECT_NE(out.find("it's 2 $HOME\nend\nrc=0\n0\n"), std::string::npos) << out;
  // A syntax error ends bash before execd's save step, as with execd's own script.
  int code = 0;
  out = RunBash(AsExecdRunsIt(ShellRunScript("t", "if then fi", "")), &code);
  EXPECT_EQ(code, 2) << out;
  EXPECT_EQ(out.find("rc="), std::string::npos) << out;
}

TEST(ShellScriptTest, SetMinusEAndSetMinusAOfTheCommandKeepItsState) {
  // A failing && list does not trip `set -e`, so execd saves the state; the wrapper's
  // clean-up must not trip it either.
  std::string out = RunBash(AsExecdRunsIt(ShellRunScript(
      "t", "set -e; cd /tmp; export A=3; test -f /no/such/file && echo found", "")));
  EXPECT_NE(out.find("rc=1\n0\n/tmp\nA=3\n"), std::string::npos) << out;
  // A failing simple command under `set -e` ends bash, as it would upstream.
  int code = 0;
  out = RunBash(AsExecdRunsIt(ShellRunScript("t", "set -e; false; echo never", "")), &code);
  EXPECT_EQ(code, 1) << out;
  EXPECT_EQ(out.find("never"), std::string::npos) << out;
  // `set -a` exports every variable set afterwards: none of the wrapper's is left.
  out = RunBash(AsExecdRunsIt(ShellRunScript("t", "set -a; A=4", "/tmp")));
  EXPECT_NE(out.find("rc=0\n0\n/tmp\nA=4\n"), std::string::npos) << out;
}

TEST(ShellScriptTest, OnlyTheHeaderParses) {
  auto header = ParseShellRunHeader("__ABX_SHELL_RUN__:1234:56789");
  ASSERT_TRUE(header.has_value());
  EXPECT_EQ(header->pid, 1234);
  EXPECT_EQ(header->start_time, "56789");
  header = ParseShellRunHeader("__ABX_SHELL_RUN__:1234:");  // no /proc: a pid alone
  ASSERT_TRUE(header.has_value());
  EXPECT_TRUE(header->start_time.empty());
  for (const char* line : {"", "hello", "__ABX_SHELL_RUN__:", "__ABX_SHELL_RUN__:x:1", "__ABX_SHELL_RUN__:1:2",
                           "__ABX_SHELL_RUN__:12:3 4", "__ABX_SHELL_RUN__:12"}) {
    EXPECT_FALSE(ParseShellRunHeader(line).has_value()) << line;
  }
  // execd's script file, named last; anything else $0 may be (bash, a path of the
  // user's) is never taken for one, so the bridge removes nothing else.
  header = ParseShellRunHeader("__ABX_SHELL_RUN__:1234:56789:/tmp/execd_bash_3141.sh");
  ASSERT_TRUE(header.has_value());
  EXPECT_EQ(header->start_time, "56789");
  EXPECT_EQ(header->script, "/tmp/execd_bash_3141.sh");
  header = ParseShellRunHeader("__ABX_SHELL_RUN__:1234::/var/tmp/a:b/execd_bash_1.sh");
  ASSERT_TRUE(header.has_value());
  EXPECT_EQ(header->script, "/var/tmp/a:b/execd_bash_1.sh");
  for (const char* script : {"bash", "/bin/bash", "/home/u/execd_bash_1.sh.bak", "/tmp/x/execd_bash_", "tmp/execd_bash_1.sh",
                             "/tmp/my_execd_bash_1.sh"}) {
    header = ParseShellRunHeader(std::string("__ABX_SHELL_RUN__:1234:56789:") + script);
    ASSERT_TRUE(header.has_value()) << script;
    EXPECT_TRUE(header->script.empty()) << script;
  }
}

TEST(ShellScriptTest, TheEndScriptKillsTaggedProcessesAndTheHeadersBash) {
  // A tagged tree: bash, a child, and a grandchild that left its parent.
  const pid_t tree = SpawnBash("(sleep 1000 &); sleep 1000 & wait", "feedc0de");
  // Untagged, with another tag: must survive.
  const pid_t other = SpawnBash("sleep 1000", "0ther");
  // A bash busy in a builtin loop, found only through its header.
  const pid_t looping = SpawnBash(ShellRunScript("unused", "while :; do :; done", "") + " > /dev/null", nullptr);
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  std::string stat;
  {
    FILE* f = fopen(("/proc/" + std::to_string(looping) + "/stat").c_str(), "r");
    ASSERT_NE(f, nullptr);
    char buffer[1024];
    stat.assign(buffer, fread(buffer, 1, sizeof buffer, f));
    fclose(f);
  }
  // Field 22, after the parenthesised name.
  size_t at = stat.rfind(')') + 2;
  for (int field = 3; field < 22; ++field) at = stat.find(' ', at) + 1;
  const std::string start_time = stat.substr(at, stat.find(' ', at) - at);

  // A stale header (another start time) kills nothing.
  ShellRunHeader stale{looping, start_time + "1"};
  RunBash(KillShellRunScript(stale, "nothing-has-this"));
  int signal = 0;
  EXPECT_FALSE(Ended(looping, 1, &signal));

  RunBash(KillShellRunScript(ShellRunHeader{looping, start_time}, "feedc0de"));
  EXPECT_TRUE(Ended(looping, 5, &signal));
  EXPECT_EQ(signal, SIGKILL);
  EXPECT_TRUE(Ended(tree, 5, &signal));
  EXPECT_EQ(signal, SIGKILL);
  EXPECT_FALSE(Ended(other, 1, &signal));
  kill(other, SIGKILL);
  EXPECT_TRUE(Ended(other, 5, &signal));
  // The grandchild was tagged too: nothing with the tag is left.
  const std::string left = RunBash(
      "for d in /proc/[0-9]*; do mapfile -d '' -t e < $d/environ 2>/dev/null; "
      "for v in \"${e[@]}\"; do [[ $v == ABX_EXEC_TAG=feedc0de ]] && echo ${d#/proc/}; done; done; true");
  EXPECT_EQ(left, "");
}

}  // namespace
}  // namespace abx::core
