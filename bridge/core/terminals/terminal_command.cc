#include "bridge/core/terminals/terminal_command.h"

#include <cctype>
#include <map>

#include "bridge/core/shell_quote.h"

namespace abx::core {

std::optional<TerminalSignal> TerminalSignalFor(const std::string& signal) {
  std::string name;
  for (char c : signal) name += static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  if (name.rfind("SIG", 0) == 0) name = name.substr(3);
  static const std::map<std::string, std::string> kNumbers = {{"1", "HUP"},  {"2", "INT"},  {"3", "QUIT"},
                                                             {"9", "KILL"}, {"15", "TERM"}, {"20", "TSTP"}};
  if (auto it = kNumbers.find(name); it != kNumbers.end()) name = it->second;
  if (name == "INT") return TerminalSignal{"\x03", ""};
  if (name == "QUIT") return TerminalSignal{"\x1c", ""};
  if (name == "TSTP") return TerminalSignal{"\x1a", ""};
  if (name == "TERM" || name == "KILL" || name == "HUP") return TerminalSignal{"", "SIG" + name};
  return std::nullopt;
}

std::string TerminalCommand(const TerminalOpenSpec& spec) {
  std::string settings = "TERM=" + ShellQuote(spec.term.empty() ? "xterm-256color" : spec.term);
  for (const auto& [key, value] : spec.env) settings += " " + ShellQuote(key + "=" + value);
  // A command runs as execd would run it itself (bash -c), so the settings reach all of it.
  const std::string program = "bash --norc --noprofile" + (spec.command.empty() ? "" : " -c " + ShellQuote(spec.command));
  // A Docker sandbox's execd is started in the background of a non-interactive sh
  // (bootstrap.sh's `$EXECD &`), so it and the shells it starts have SIGINT and SIGQUIT
  // ignored, and a program cannot undo an ignore it inherited: ^C would stop nothing.
  // GNU env (coreutils 8.31 and newer) starts its program with them at their defaults;
  // where env lacks the option the terminal starts as before (docs/mapping.md, pty.open).
  return "if env --default-signal=INT,QUIT true 2>/dev/null; then exec env --default-signal=INT,QUIT " +
         settings + " " + program + "; fi; exec env " + settings + " " + program;
}

}  // namespace abx::core
