#pragma once
// What the bridge wraps around a command it runs in a shell (an execd bash session,
// docs/opensandbox.md §2.15), and the command that ends such a run (docs/mapping.md,
// "Shells").
//
// execd runs each command of a session as a fresh bash that restores the saved exported
// variables and directory, runs the command, and saves them again. Its only ways to stop
// a run are deleting the whole session or killing bash (on timeout or when the client
// leaves), and neither reaches the processes bash started. So the wrapper:
// - prints one header line first, `__ABX_SHELL_RUN__:<pid>:<start time>:<script>`,
//   naming the run's bash (its pid and its start time from /proc, so a reused pid is
//   never taken for it) and the script file execd runs it from (/tmp/execd_bash_*.sh,
//   which execd never removes and which holds the command and every exported variable:
//   the bridge removes it at once); the bridge reads the line and never passes it on;
// - exports ABX_EXEC_TAG=<tag> before the command, so every process the command starts
//   carries the tag in its environment (process.list names them by exec_id as it does
//   for every command), and unsets it again after the command, so the tag never
//   reaches the state execd saves;
// - runs the command as it is, in that same bash, as execd inlines it, so its `cd` and
//   `export` stay and `set -e`, `exit` and syntax errors behave as they do upstream; the
//   clean-up after it restores the command's status without tripping its `set -e` and
//   leaves no variable of its own behind (not even under `set -a`).
// Ending a run is then: kill that bash, then every process with the tag.

#include <cstdint>
#include <optional>
#include <string>

namespace abx::core {

// The script to send for `command` (with `cwd` non-empty: a `cd` to it first, which
// the shell keeps, as the contract asks; a missing directory is that command's error:
// bash's message and status 1, and the command does not run).
std::string ShellRunScript(const std::string& tag, const std::string& command, const std::string& cwd);

// The run's bash, from the header line; nullopt when `line` is not the header.
struct ShellRunHeader {
  int64_t pid = 0;
  std::string start_time;  // /proc/<pid>/stat field 22; empty when /proc was unreadable
  std::string script;      // execd's script file for the run; empty when $0 was not one
};
std::optional<ShellRunHeader> ParseShellRunHeader(const std::string& line);

// A script for execd's /command that kills the run's bash (only if its pid still names
// the process that printed the header) and then every process tagged `tag`, again until
// none is left (a dying parent may fork once more), at most 40 rounds.
std::string KillShellRunScript(const std::optional<ShellRunHeader>& header, const std::string& tag);

}  // namespace abx::core
