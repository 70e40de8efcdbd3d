#pragma once

// Starting `bash -c <command>` the way execd does: its own process group (so timeouts and
// interrupts reach every descendant), stdin from /dev/null, optional uid/gid, and output
// either on two pipes (foreground: stdout and stderr framed apart) or on one file
// (background: a single combined log).
//
// Only async-signal-safe calls happen between fork() and exec(): everything the child
// needs (argv, envp, group list) is prepared before the fork. A CLOEXEC pipe carries
// the errno of a failed setup step back, so a start failure is reported, not just a
// mysterious exit code 127.

#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "tests/fake-opensandbox/sandbox_volumes.h"

namespace fake_opensandbox {

struct SpawnOptions {
  std::string command;
  std::string host_cwd;               // already mapped into the sandbox root
  // When set (and we run as root), the command runs chrooted into this host directory,
  // in a mount namespace of its own with the host's system directories bound in
  // read-only, so the paths it sees are the sandbox's — the same the files API maps.
  std::string chroot_dir;
  std::string chroot_cwd;             // the working directory as the sandbox sees it
  // The sandbox's volumes, bound at their mount paths after the system directories
  // (their mount points exist: the registry makes them at create).
  std::vector<VolumeMount> mounts;
  std::vector<std::string> env;       // "KEY=VALUE" entries, complete
  std::optional<uint32_t> uid;
  std::optional<uint32_t> gid;        // only together with uid
  int combined_output_fd = -1;        // >= 0: stdout and stderr both go here
  int stdin_fd = -1;                  // >= 0: the command's stdin (else /dev/null)
  int stderr_fd = -1;                 // >= 0: stderr goes here, stdout to its pipe
  // >= 0: the terminal side of a pseudo-terminal. It becomes stdin, stdout, stderr and
  // the controlling terminal of a new session (setsid), as execd's PTY does; no pipes.
  int terminal_fd = -1;
  // `bash --norc --noprofile` (with `-c command` when `command` is not empty), as a
  // terminal runs it, instead of `bash -c command`.
  bool interactive = false;
  // SIGINT starts ignored, as in what execd starts without catching signals first: a
  // Docker sandbox's execd runs in the background of a non-interactive sh (bootstrap.sh's
  // `$EXECD &`), so it has SIGINT ignored, and its terminals and bash-session runs inherit
  // that. (Its /command runs do not: execd catches every signal while it starts one.)
  bool sigint_ignored = false;
};

struct SpawnedProcess {
  pid_t pid = -1;         // also the process group id
  int stdout_fd = -1;     // read ends, non-blocking (foreground only)
  int stderr_fd = -1;
  int pidfd = -1;         // readable once the process exits; -1 if the kernel lacks pidfd
};

// On failure returns false and a Go-like text in *error, e.g.
// "fork/exec /usr/bin/bash: operation not permitted".
bool SpawnShell(const SpawnOptions& options, SpawnedProcess* process, std::string* error);

// True when `sandbox_path` is one of the host directories a chrooted command gets bound
// in (/usr, /etc, /dev, …) or below one: a volume cannot be mounted there by the fake.
bool UnderBoundSystemDir(const std::string& sandbox_path);

// Go's ProcessState.String(): "exit status 3", "signal: killed", ...
std::string DescribeWaitStatus(int wait_status);

// The environment of this process as "KEY=VALUE" entries with `overrides` merged over it.
std::vector<std::string> MergedEnvironment(
    const std::vector<std::pair<std::string, std::string>>& overrides);

}  // namespace fake_opensandbox
