#pragma once

// `fake-opensandbox jail [--cgroup-procs FILE] [--overlay LOWER:DIR:WORK]... -- PROGRAM ARGS...`:
// the first step of a sandbox that runs the real execd (real_execd.h). It gives PROGRAM (bubblewrap) a
// user namespace in which uid and gid 0..2^32-2 are the host's own ids, as a container's
// root is root over its own files, and a mount namespace in which every DIR is an overlay
// of the host's read-only LOWER with DIR itself as the writable layer (WORK: overlayfs's
// work directory, on DIR's file system). Bubblewrap, running as root of that namespace,
// does the rest (PID, IPC, UTS and network namespaces, the root, /dev, /proc).
//
// Why a step of our own: Debian 12's bubblewrap (0.8) has no overlay mounts, and a user
// namespace mapping more than one id must be written by a process outside it. So this
// process forks; the child enters the new namespaces, this process writes its id maps,
// the child mounts the overlays and execs PROGRAM. This process then only waits and
// exits with the child's status; killed, it takes the child with it (parent-death
// signal), and bubblewrap's --die-with-parent takes the whole sandbox.
//
// With --cgroup-procs, this process first joins the control group whose `cgroup.procs`
// FILE is (the sandbox's CPU limit, sandbox_cgroup.h), so everything it starts is in it.
//
// Everything mounted lives in the child's mount namespace: nothing is left on the host
// when the sandbox's last process ends.

namespace fake_opensandbox {

// The name of the subcommand, argv[1] of the fake's own binary.
inline constexpr char kJailSubcommand[] = "jail";

// Runs the subcommand (argv[0] is the binary, argv[1] kJailSubcommand); never returns on
// success of the child's exec, else an exit status.
int RunJail(int argc, char** argv);

}  // namespace fake_opensandbox
