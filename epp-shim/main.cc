// abx-opensandbox-shim: the EPP/1 provider command that abx starts once per host
// command. It forwards every stdin line to the shared bridge and every line the bridge
// answers to stdout (see session.h, bridge_client.cc).
//
//   abx-opensandbox-shim            speak EPP/1 on stdin/stdout
//   abx-opensandbox-shim --version  print name, version and build id
//
// Start-up does nothing before the first line arrives: no connection, no config. The
// shim has one thread throughout (session.h).

#include <errno.h>
#include <fcntl.h>
#include <malloc.h>
#include <signal.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <string>

#include "common/build_id.h"
#include "common/version.h"
#include "epp-shim/bridge_client.h"
#include "epp-shim/config_resolver.h"
#include "epp-shim/local_files.h"
#include "epp-shim/session.h"

namespace {

constexpr char kShimName[] = "abx-opensandbox-shim";

// A stop signal wakes the session's loop through this pipe (session.h, stop_fd).
int g_stop_pipe[2] = {-1, -1};
volatile sig_atomic_t g_stop_signal = 0;

// With no new file of a download to remove, the signal does what it always did, at
// once (the loop may be busy starting the bridge); else the loop removes them first.
void OnStopSignal(int signal_number) {
  const int saved_errno = errno;
  if (abx::LocalFiles::open_downloads == 0) {
    signal(signal_number, SIG_DFL);
    raise(signal_number);
  }
  g_stop_signal = signal_number;
  const char byte = 1;
  (void)!write(g_stop_pipe[1], &byte, 1);
  errno = saved_errno;
}

// SIGTERM, SIGINT and SIGHUP end the shim as before, once the new files of its downloads
// are removed (files.transfer leaves nothing behind). One ignored when the shim started
// (nohup, a background job) stays ignored.
void WatchStopSignals() {
  if (pipe2(g_stop_pipe, O_CLOEXEC | O_NONBLOCK) != 0) return;
  struct sigaction action = {};
  action.sa_handler = OnStopSignal;
  action.sa_flags = SA_RESTART;
  sigemptyset(&action.sa_mask);
  for (int signal_number : {SIGTERM, SIGINT, SIGHUP}) {
    struct sigaction before = {};
    if (sigaction(signal_number, nullptr, &before) == 0 && before.sa_handler == SIG_IGN) continue;
    sigaction(signal_number, &action, nullptr);
  }
}

int Usage(FILE* out) {
  std::fprintf(out,
               "usage: %s [--version]\n"
               "Speaks EPP/1 on stdin/stdout for abx, through the abx-opensandbox-bridge\n"
               "daemon (started on demand; ABX_OPENSANDBOX_BRIDGE_SOCKET and\n"
               "ABX_OPENSANDBOX_BRIDGE_BIN override its socket and binary).\n",
               kShimName);
  return out == stderr ? 2 : 0;
}

}  // namespace

int main(int argc, char** argv) {
  // Large lines (a files.write chunk is megabytes) pass through buffers of their own size:
  // the line, the parser's copy of its strings, messages gathered from HTTP/2 frames.
  // Left to glibc's defaults, each was a fresh mapping, faulted in page by page and
  // unmapped again at every line, which was most of the shim's CPU on large lines.
  // They come from the heap and are reused instead; the shim is one thread, so one
  // arena, and the session hands the free memory back once its host has gone quiet
  // (session.h, "Memory").
  mallopt(M_MMAP_THRESHOLD, 32 << 20);
  mallopt(M_TRIM_THRESHOLD, 64 << 20);
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--version") == 0) {
      std::printf("%s %s %s (build %s)\n", kShimName, abx::kProviderName,
                  abx::kProviderVersion, abx::kBuildId);
      return 0;
    }
    if (std::strcmp(argv[i], "--help") == 0 || std::strcmp(argv[i], "-h") == 0) {
      return Usage(stdout);
    }
    std::fprintf(stderr, "%s: unknown argument %s\n", kShimName, argv[i]);
    return Usage(stderr);
  }

  // A host that stops reading must not kill us mid-write; writes then fail with EPIPE.
  signal(SIGPIPE, SIG_IGN);
  WatchStopSignals();

  abx::BridgeClient client(abx::BridgeClientOptions::FromEnvironment(abx::kBuildId));
  abx::ShimSession::Options options;
  options.shim_version = abx::kProviderVersion;
  options.build_id = abx::kBuildId;
  options.resolve_config = [] { return abx::ResolveConfigFromProcess(); };
  // The session has written out stdout (or given up on it) before it calls on_exit or
  // returns; nothing else needs tearing down.
  options.on_exit = [] { _exit(0); };
  options.stop_fd = g_stop_pipe[0];
  options.on_stop = [] {
    const int signal_number = g_stop_signal;
    signal(signal_number, SIG_DFL);
    raise(signal_number);
    _exit(128 + signal_number);
  };
  abx::ShimSession session(&client, STDOUT_FILENO, std::move(options));
  const int code = session.Run(STDIN_FILENO);
  _exit(code);
}
