#pragma once
// What runs in a terminal and how a signal reaches it (docs/mapping.md, pty.open and
// pty.signal): the shell or command execd starts, with the terminal's TERM and
// environment, and a signal as the byte a terminal turns into it or as execd's frame.

#include <map>
#include <optional>
#include <string>

namespace abx::core {

struct TerminalOpenSpec {
  std::string sandbox_id;
  int cols = 80, rows = 24;
  std::string cwd;
  std::string term;     // empty: not given (xterm-256color where execd takes a command)
  std::map<std::string, std::string> env;
  std::string command;  // empty: a shell
  bool keep = false;
};

// The command execd runs for `spec`: `env TERM=… K=V … bash --norc --noprofile`, or
// the spec's command in place of the shell.
std::string TerminalCommand(const TerminalOpenSpec& spec);

// A signal name or number → what pty.signal does with it: the input byte of a keyboard
// signal ("\x03"), or the name for execd's signal frame ("SIGTERM"). Nullopt: E8004.
struct TerminalSignal {
  std::string input;
  std::string frame;
};
std::optional<TerminalSignal> TerminalSignalFor(const std::string& signal);

}  // namespace abx::core
