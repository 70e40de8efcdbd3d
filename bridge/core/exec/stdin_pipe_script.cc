#include "bridge/core/exec/stdin_pipe_script.h"

namespace abx::core {
namespace {

constexpr std::string_view kAnnouncement = "abx-stdin ";

}  // namespace

std::string StdinPipeCommand(const std::string& command, const std::string& tag, int lease_s) {
  // Descriptors of the wrapper: 7 the data pipe's write end (read-write, so opening it
  // never blocks), 8 its read end for the command, 9 the end-of-file pipe's write end,
  // 5 a pipe the holder says "ready" on once its descriptors are in place (before that its
  // /proc entry may not show them yet). The holder's stdin is the end-of-file pipe, read
  // only, and its fd 6 the data pipe. Its first read ends with the line end of file
  // writes, or with the end of the end-of-file pipe itself: when the wrapper, its only
  // other writer, is gone (ended, or killed alone, as execd before 1.0.18 kills). Either
  // way it lets go of the data pipe, which so loses its last writer; it then waits for
  // the wrapper's end, so that its /proc entry outlives the upload that signalled it
  // (execd 1.0.18 and older chown an upload's target after writing it, and fail the
  // upload when it is gone), and the wrapper reaps it. The command runs in a subshell, so
  // that an `exit` or `exec` in it cannot skip the reaping.
  // The lease: the holder's first stage reads one line at a time, each under coreutils'
  // `timeout` (a `timeout` that cannot run `timeout N true`, an old busybox's, means no
  // lease: the lines are read as they come, pings skipped). An empty line is end of file, `p` the bridge's ping; no line for `lease_s`
  // seconds means the bridge is gone, and is taken as end of file too. The second stage
  // reads every line until the wrapper's end, so that a ping racing the end of file is
  // harmless.
  // /tmp, not $TMPDIR: every image has /tmp, and the environment execd passes on may
  // name a directory of somewhere else.
  const std::string dir = "/tmp/.abx-stdin-" + tag;
  return "d=" + dir + "\n"
         "mkdir -m 700 -- \"$d\" && mkfifo -- \"$d/in\" \"$d/eof\" \"$d/ready\" && "
         "exec 7<>\"$d/in\" 8<\"$d/in\" 9<>\"$d/eof\" 5<>\"$d/ready\" || { rm -rf -- \"$d\"; exit " +
         std::to_string(kStdinPipeSetupFailed) + "; }\n"
         "(exec 0<\"$d/eof\" 6>&7 7>&- 8<&- 9>&- >/dev/null 2>&1; echo >&5; exec 5>&-\n"
         " if timeout 5 true; then\n"
         "  while l=$(timeout " + std::to_string(lease_s) + " sh -c 'read -r l && echo \"$l\"') && "
         "[ -n \"$l\" ]; do :; done\n"
         " else while read -r l && [ -n \"$l\" ]; do :; done; fi\n"
         " exec 6>&-; while read -r _; do :; done) &\n"
         "h=$!\n"
         "read -r _ <&5\n"
         "exec 5>&- 7>&-\n"
         "rm -rf -- \"$d\"\n"
         "echo \"" + std::string(kAnnouncement) + tag + " $h\" >&2\n"
         "(" + command + "\n) <&8 8<&- 9>&-\n"
         "s=$?\n"
         "exec 8<&- 9>&-\n"
         "wait \"$h\"\n"
         "exit \"$s\"\n";
}

std::optional<int> StdinPipeHolder(std::string_view stderr_line, const std::string& tag) {
  if (stderr_line.substr(0, kAnnouncement.size()) != kAnnouncement) return std::nullopt;
  stderr_line.remove_prefix(kAnnouncement.size());
  if (stderr_line.substr(0, tag.size()) != tag || stderr_line.size() <= tag.size() + 1 ||
      stderr_line[tag.size()] != ' ') {
    return std::nullopt;
  }
  stderr_line.remove_prefix(tag.size() + 1);
  if (stderr_line.size() > 9) return std::nullopt;
  int pid = 0;
  for (char c : stderr_line) {
    if (c < '0' || c > '9') return std::nullopt;
    pid = pid * 10 + (c - '0');
  }
  if (pid <= 0) return std::nullopt;
  return pid;
}

std::string StdinDataPath(int holder_pid) { return "/proc/" + std::to_string(holder_pid) + "/fd/6"; }
std::string StdinEofPath(int holder_pid) { return "/proc/" + std::to_string(holder_pid) + "/fd/0"; }

}  // namespace abx::core
