#pragma once
// How a command started with `stdin_stream` gets a stdin that process.stdin can write
// (docs/epp1.md, "Interactive stdin"). execd has no stdin route on any release, so the
// command runs inside a few lines of POSIX sh (coreutils only) that give it a pipe:
//
// - a FIFO is made in a private directory, opened, and its directory removed at once, so
//   nothing stays in the sandbox's file system even if the command is killed;
// - a "holder" subshell keeps the pipe's write end open between writes (else the
//   command would read end of file after the first one) and waits on a second pipe for
//   the end-of-file signal;
// - the wrapper names the holder's pid on its first stderr line (the bridge takes that
//   line out of the output), runs the command, then lets the holder go and reaps it.
//
// A write is then one execd upload to the holder's open descriptor,
// /proc/<pid>/fd/<n> (execd's upload opens its target with O_WRONLY|O_TRUNC and copies
// into it, which on a pipe is a plain write, on every release from 1.0.8): no process
// is started for it, and no bridge thread waits while the command is idle. End of file
// is one more upload, of a newline, to the holder's second pipe: the holder closes its
// end of the data pipe, which so loses its last writer, and the command reads the end of
// file once it has read the rest. Without a ping for its lease the holder does
// the same by itself (a bridge that died). The holder goes with the command's process group
// (execd's kill and timeout from 1.0.18 signal the whole group) or with the wrapper; the
// `timeout` of its lease puts itself in a group of its own and ends a moment later, when
// the end-of-file pipe loses its last writer.
//
// What the wrapper changes for the command: it is the wrapper's child rather than
// execd's, so a signal sent to it alone (process.signal to its pid) is an exit code of
// 128 + the signal's number, as for any command whose shell outlives it.

#include <optional>
#include <string>
#include <string_view>

namespace abx::core {

// The shell string execd runs instead of `command`; `tag` (hex) names the pipe. The pipe
// stays open `lease_s` seconds without a line from its bridge: the bridge pings every
// third of it (kStdinPingLine to the end-of-file path), and a bridge that is gone leaves
// the command at end of file within the lease, rather than waiting for input for ever.
std::string StdinPipeCommand(const std::string& command, const std::string& tag, int lease_s);
inline constexpr char kStdinPingLine[] = "p\n";

// The holder's pid when `stderr_line` is the wrapper's announcement for `tag`.
std::optional<int> StdinPipeHolder(std::string_view stderr_line, const std::string& tag);

// Where a write goes, and where end of file is signalled, for a holder's pid.
std::string StdinDataPath(int holder_pid);
std::string StdinEofPath(int holder_pid);

// The exit code of a wrapper that could not make its pipe (its stderr says why).
inline constexpr int kStdinPipeSetupFailed = 125;

}  // namespace abx::core
