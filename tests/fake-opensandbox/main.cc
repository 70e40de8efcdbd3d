// fake-opensandbox: the OpenSandbox lifecycle server and execd, faked on this host for
// tests and local development (see --help and README.md; no isolation at all).

#include <signal.h>
#include <unistd.h>

#include <cstdio>
#include <iostream>
#include <thread>

#include "tests/fake-opensandbox/fake_server.h"
#include "tests/fake-opensandbox/flags.h"
#include "tests/fake-opensandbox/sandbox_jail.h"

int main(int argc, char** argv) {
  using namespace fake_opensandbox;
  // A sandbox's first step, run by the fake itself (sandbox_jail.h).
  if (argc > 1 && std::string(argv[1]) == kJailSubcommand) return RunJail(argc, argv);
  FakeConfig config;
  std::string error;
  switch (ParseFlags(argc, argv, &config, &error)) {
    case FlagsResult::kHelp:
      std::cout << HelpText();
      return 0;
    case FlagsResult::kError:
      std::cerr << "fake-opensandbox: " << error << "\n";
      return 2;
    case FlagsResult::kRun:
      break;
  }

  signal(SIGPIPE, SIG_IGN);
  // Termination signals are taken synchronously by this thread (sigwait below); every
  // thread started from here on inherits the blocked mask.
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGINT);
  sigaddset(&stop_signals, SIGTERM);
  sigaddset(&stop_signals, SIGHUP);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);

  std::unique_ptr<FakeServer> fake = FakeServer::Start(config, &error);
  if (!fake) {
    std::cerr << "fake-opensandbox: " << error << "\n";
    return 1;
  }
  printf("listening on 127.0.0.1:%d\n", fake->port());
  fflush(stdout);

  if (config.exit_on_stdin_eof) {
    std::thread([] {
      char buf[256];
      while (read(0, buf, sizeof(buf)) > 0) {
      }
      kill(getpid(), SIGTERM);
    }).detach();
  }

  int sig = 0;
  sigwait(&stop_signals, &sig);
  // Kill the sandboxes' processes and remove the temp root; don't wait for clients.
  fake->EmergencyCleanup();
  fflush(stdout);
  _exit(0);
}
