// What runs in a terminal and how signals reach it (bridge/core/terminals/terminal_command.h).
#include "bridge/core/terminals/terminal_command.h"

#include <gtest/gtest.h>

namespace abx::core {
namespace {

TEST(TerminalCommandTest, AShellWithTheDefaultTermAndItsSignalsRestored) {
  TerminalOpenSpec spec;
  const std::string command = TerminalCommand(spec);
  EXPECT_NE(command.find("exec env --default-signal=INT,QUIT TERM='xterm-256color' bash --norc --noprofile;"),
            std::string::npos)
      << command;
  // Where env lacks the option, the same shell without it.
  EXPECT_NE(command.find("; fi; exec env TERM='xterm-256color' bash --norc --noprofile"), std::string::npos)
      << command;
}

TEST(TerminalCommandTest, TheSettingsAndTheCommandAreQuoted) {
  TerminalOpenSpec spec;
  spec.term = "vt100";
  spec.env = {{"GREETING", "it's me"}};
  spec.command = "echo $GREETING; exit 3";
  const std::string command = TerminalCommand(spec);
  EXPECT_NE(command.find("TERM='vt100' 'GREETING=it'\\''s me' bash --norc --noprofile -c 'echo $GREETING; exit 3'"),
            std::string::npos)
      << command;
}

TEST(TerminalCommandTest, KeyboardSignalsAreTheirBytes) {
  for (const char* name : {"SIGINT", "int", "Int", "2"}) EXPECT_EQ(TerminalSignalFor(name)->input, "\x03") << name;
  EXPECT_EQ(TerminalSignalFor("SIGQUIT")->input, "\x1c");
  EXPECT_EQ(TerminalSignalFor("3")->input, "\x1c");
  EXPECT_EQ(TerminalSignalFor("sigtstp")->input, "\x1a");
  EXPECT_EQ(TerminalSignalFor("20")->input, "\x1a");
  EXPECT_EQ(TerminalSignalFor("SIGINT")->frame, "");
}

TEST(TerminalCommandTest, OtherSignalsGoAsExecdsFrame) {
  EXPECT_EQ(TerminalSignalFor("TERM")->frame, "SIGTERM");
  EXPECT_EQ(TerminalSignalFor("15")->frame, "SIGTERM");
  EXPECT_EQ(TerminalSignalFor("9")->frame, "SIGKILL");
  EXPECT_EQ(TerminalSignalFor("sighup")->frame, "SIGHUP");
  EXPECT_EQ(TerminalSignalFor("1")->input, "");
}

TEST(TerminalCommandTest, ASignalNoTerminalCarriesIsRefused) {
  EXPECT_EQ(TerminalSignalFor("SIGUSR1"), std::nullopt);
  EXPECT_EQ(TerminalSignalFor("10"), std::nullopt);
  EXPECT_EQ(TerminalSignalFor(""), std::nullopt);
  EXPECT_EQ(TerminalSignalFor("SIG"), std::nullopt);
}

}  // namespace
}  // namespace abx::core
