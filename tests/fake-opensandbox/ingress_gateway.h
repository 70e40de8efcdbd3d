#pragma once

// The ingress gateway in front of a Kubernetes server's sandboxes (upstream's
// components/ingress; docs/opensandbox.md §1.10), on its own listener. Every request
// names a sandbox and a port by its route, as the server's endpoints say:
//
//   wildcard  Host: {id}-{port}.<base>         (the gateway's header mode, reading Host)
//   header    OpenSandbox-Ingress-To: {id}-{port}
//   uri       /{id}/{port}/<path>              (the route is stripped before passing on)
//
// and a signed route puts {expires_b36} and {signature} after the port
// (signed_route.h). The sandbox must exist (404) and run (503). A secure sandbox (one
// created with secureAccess) is reached only with its OpenSandbox-Secure-Access header
// or, without that header, a signed route whose signature holds and whose expiry has not
// passed (401 otherwise). A sandbox that is not secure is open to any route: a signature
// in it is not even looked at, as upstream's gateway does. Errors are Go's http.Error:
// "OpenSandbox Ingress: <reason>\n" in text/plain.
//
// Requests pass on to the sandbox's port as the server proxy passes them
// (sandbox_port_target.h), answers and WebSocket upgrades streamed through.

#include <httplib.h>

#include <atomic>
#include <memory>
#include <string>
#include <thread>

#include "tests/fake-opensandbox/fake_config.h"
#include "tests/fake-opensandbox/fault_state.h"
#include "tests/fake-opensandbox/sandbox_registry.h"
#include "tests/fake-opensandbox/server_clock.h"
#include "tests/fake-opensandbox/server_stats.h"

namespace fake_opensandbox {

class IngressGateway {
 public:
  // Listens on a free port of 127.0.0.1 with the route mode and keys of `config`.
  static std::unique_ptr<IngressGateway> Start(const FakeConfig& config, SandboxRegistry* registry,
                                               std::shared_ptr<FaultState> faults,
                                               std::shared_ptr<ServerStats> stats, ServerClock clock,
                                               std::string* error);
  ~IngressGateway();

  int port() const { return port_; }

 private:
  IngressGateway() = default;
  void Handle(const httplib::Request& req, httplib::Response& res);

  FakeConfig config_;
  SandboxRegistry* registry_ = nullptr;
  std::shared_ptr<FaultState> faults_;
  std::shared_ptr<ServerStats> stats_;
  ServerClock clock_;
  httplib::Server server_;
  std::thread listener_;
  int port_ = 0;
};

// The gateway's address as the server's configuration names it (ingress.gateway.address):
// "127.0.0.1:<port>", or "*.localhost:<port>" in wildcard mode (every name under
// localhost is the loopback for curl and for browsers).
std::string GatewayAddress(IngressRouteMode mode, int port);

}  // namespace fake_opensandbox
