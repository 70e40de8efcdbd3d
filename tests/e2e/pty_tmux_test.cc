// `abx-opensandbox-bridge pty` as a person sees it: the command runs in a tmux window
// (a real terminal), keys are sent with send-keys and the screen is read back with
// capture-pane. The sandbox's terminal shows what is typed, follows the window's size,
// and the command ends with the shell's exit code.

#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <string>
#include <thread>

#include <gtest/gtest.h>

#include "tests/e2e/harness.h"

namespace abx::e2e {
namespace {

class PtyTmuxTest : public TestEnv {
 protected:
  void SetUp() override {
    TestEnv::SetUp();
    REQUIRE_EXECD("1.0.10", "terminals");
    ASSERT_TRUE(StartShimWithSandbox(&shim_, &sandbox_));
    tmux_ = "tmux -S " + root_dir() + "/tmux.sock";
  }
  void TearDown() override {
    Sh(tmux_ + " kill-server");
    TestEnv::TearDown();
  }

  static int Sh(const std::string& command) { return std::system((command + " >/dev/null 2>&1").c_str()); }
  static std::string Out(const std::string& command) {
    std::string out;
    FILE* pipe = popen(command.c_str(), "r");
    if (!pipe) return out;
    char buffer[4096];
    size_t n;
    while ((n = fread(buffer, 1, sizeof buffer, pipe)) > 0) out.append(buffer, n);
    pclose(pipe);
    return out;
  }
  std::string Screen(const std::string& session = "abx") { return Out(tmux_ + " capture-pane -p -t " + session); }
  bool WaitScreen(const std::string& needle, int seconds = 15, const std::string& session = "abx") {
    for (int i = 0; i < seconds * 10; ++i) {
      if (Screen(session).find(needle) != std::string::npos) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    ADD_FAILURE() << "no \"" << needle << "\" on the screen:\n" << Screen(session);
    return false;
  }
  // A script that runs `abx-opensandbox-bridge pty SANDBOX [PTY_ID]` with the shim's
  // configuration exported (never in argv), then records its exit code.
  std::string AttachScript(const std::string& name, const std::string& pty_id = "") {
    const std::string script = root_dir() + "/" + name + ".sh";
    std::ofstream out(script);
    out << "#!/bin/sh\n";
    for (const std::string& entry : ShimEnv()) {
      const size_t eq = entry.find('=');
      std::string value = entry.substr(eq + 1);
      std::string quoted = "'";
      for (char c : value) quoted += c == '\'' ? std::string("'\\''") : std::string(1, c);
      out << "export " << entry.substr(0, eq) << "=" << quoted << "'\n";
    }
    out << "export TERM=xterm-256color\n";
    out << BridgeBinary() << " pty " << sandbox_ << (pty_id.empty() ? "" : " " + pty_id) << " --socket "
        << socket_path() << "\n";
    out << "echo $? > " << root_dir() << "/" << name << ".exit_code\n";
    out.close();
    chmod(script.c_str(), 0700);
    return script;
  }
  // ^] in the first session: the CLI detaches and names the terminal that runs on; its id
  // ("" when it did not say).
  std::string DetachForPtyId() {
    Sh(tmux_ + " send-keys -t abx C-]");
    if (!WaitScreen("the terminal runs on (")) return "";
    const std::string screen = Screen();
    const size_t open = screen.rfind("the terminal runs on (") + std::string("the terminal runs on (").size();
    return screen.substr(open, screen.find(')', open) - open);
  }
  void Keys(const std::string& keys) { Sh(tmux_ + " send-keys -t abx '" + keys + "' Enter"); }

  EppSession* shim_ = nullptr;
  std::string sandbox_;
  std::string tmux_;
};

TEST_F(PtyTmuxTest, AttachCommandInARealTerminal) {
  REQUIRE_FAKE("the shim's environment points at the fake");
  ASSERT_EQ(Sh("command -v tmux"), 0) << "tools/setup installs tmux";
  // The configuration goes through the environment, never argv: a script exports it.
  const std::string script = AttachScript("attach");
  ASSERT_EQ(Sh(tmux_ + " new-session -d -s abx -x 160 -y 40 " + script), 0);
  Sh(tmux_ + " set-option -t abx remain-on-exit on");
  ASSERT_TRUE(WaitScreen("^] detaches"));
  // bash's prompt, from the terminal's first byte on (capture-pane drops trailing blanks).
  ASSERT_TRUE(WaitScreen("#\n") || WaitScreen("$\n"));

  Keys("echo hi-$((6*7))");
  ASSERT_TRUE(WaitScreen("hi-42"));
  Keys("stty size");
  ASSERT_TRUE(WaitScreen("40 160"));
  Sh(tmux_ + " resize-window -t abx -x 100 -y 30");
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  Keys("stty size");
  ASSERT_TRUE(WaitScreen("30 100"));

  Keys("exit 3");
  ASSERT_TRUE(WaitScreen("exited with 3"));
  // The command ends with the shell's code.
  std::string code;
  for (int i = 0; i < 50 && code.empty(); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    code = Out("cat " + root_dir() + "/attach.exit_code 2>/dev/null");
  }
  EXPECT_EQ(code, "3\n");
}

// Reattaching brings the screen back, as `tmux attach` does: a `top` that redraws only
// every 30 s shows its header at once in a fresh terminal that attaches to it (the
// replayed output since its last full-screen clear, then a resize round trip).
TEST_F(PtyTmuxTest, AReattachedTopRedrawsAtOnce) {
  REQUIRE_FAKE("the shim's environment points at the fake");
  ASSERT_EQ(Sh("command -v tmux"), 0) << "tools/setup installs tmux";
  ASSERT_EQ(Sh(tmux_ + " new-session -d -s abx -x 120 -y 35 " + AttachScript("first")), 0);
  Sh(tmux_ + " set-option -t abx remain-on-exit on");
  ASSERT_TRUE(WaitScreen("^] detaches"));
  ASSERT_TRUE(WaitScreen("#\n") || WaitScreen("$\n"));
  Keys("TERM=xterm top -d 30");  // a shell of an execd before 1.0.19 has no TERM of its own
  ASSERT_TRUE(WaitScreen("load average"));
  const std::string pty_id = DetachForPtyId();
  ASSERT_FALSE(pty_id.empty()) << Screen();

  ASSERT_EQ(Sh(tmux_ + " new-session -d -s again -x 120 -y 35 " + AttachScript("again", pty_id)), 0);
  // Well before top's next refresh (30 s): the redraw, not top's own timer.
  EXPECT_TRUE(WaitScreen("load average", 8, "again"));
  EXPECT_TRUE(WaitScreen("PID", 8, "again"));
  Sh(tmux_ + " send-keys -t again q");
  Sh(tmux_ + " send-keys -t again 'exit' Enter");
}

// The same for a full-screen editor, which draws once and then waits for keys: a `vi`
// reattached in a fresh terminal shows its file at once, and takes keys again.
TEST_F(PtyTmuxTest, AReattachedViShowsItsFileAndTakesKeys) {
  REQUIRE_FAKE("the shim's environment points at the fake");
  ASSERT_EQ(Sh("command -v tmux"), 0) << "tools/setup installs tmux";
  ASSERT_EQ(Sh("command -v vi"), 0) << "tools/setup installs vim-tiny";
  ASSERT_EQ(Sh(tmux_ + " new-session -d -s abx -x 120 -y 30 " + AttachScript("first")), 0);
  Sh(tmux_ + " set-option -t abx remain-on-exit on");
  ASSERT_TRUE(WaitScreen("^] detaches"));
  ASSERT_TRUE(WaitScreen("#\n") || WaitScreen("$\n"));
  Keys("printf \"vi-line-%s\\n\" one two three > /tmp/vi-redraw.txt && TERM=xterm vi /tmp/vi-redraw.txt");
  ASSERT_TRUE(WaitScreen("vi-line-three"));
  const std::string pty_id = DetachForPtyId();
  ASSERT_FALSE(pty_id.empty()) << Screen();

  ASSERT_EQ(Sh(tmux_ + " new-session -d -s again -x 120 -y 30 " + AttachScript("again", pty_id)), 0);
  EXPECT_TRUE(WaitScreen("vi-line-one", 8, "again"));
  EXPECT_TRUE(WaitScreen("vi-line-three", 8, "again"));
  // Keys reach the reattached editor: it writes its file and quits.
  Sh(tmux_ + " send-keys -t again Escape");
  Sh(tmux_ + " send-keys -t again ':s/one/ONE/' Enter");
  Sh(tmux_ + " send-keys -t again ':wq' Enter");
  std::string saved;
  for (int i = 0; i < 80 && saved.find("vi-line-ONE") == std::string::npos; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    MessagePtr r = shim_->Request(
        "exec.run", JsonObject().Str("sandbox_id", sandbox_).Str("command", "cat /tmp/vi-redraw.txt").str(), Millis(30000));
    if (r && !r->IsError()) saved = GetString(r->result(), "stdout");
  }
  EXPECT_EQ(saved, "vi-line-ONE\nvi-line-two\nvi-line-three\n");
  EXPECT_TRUE(WaitScreen("written", 8, "again"));
  Sh(tmux_ + " send-keys -t again 'exit' Enter");
}

}  // namespace
}  // namespace abx::e2e
