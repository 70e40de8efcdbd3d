#pragma once

// The whole fake in one object: the lifecycle listener (with auth, request ids, the
// Date header, fault injection, the server proxy and /_fake control routes), the
// sandbox registry, and through it every sandbox's execd listener. main.cc runs one;
// tests may run one in-process.

#include <httplib.h>

#include <atomic>
#include <memory>
#include <string>
#include <thread>

#include "tests/fake-opensandbox/fake_config.h"
#include "tests/fake-opensandbox/fault_state.h"
#include "tests/fake-opensandbox/ingress_gateway.h"
#include "tests/fake-opensandbox/lifecycle_context.h"
#include "tests/fake-opensandbox/sandbox_registry.h"
#include "tests/fake-opensandbox/server_stats.h"

namespace fake_opensandbox {

class FakeServer {
 public:
  // Prepares the root directory, binds 127.0.0.1:<config.port> and starts serving.
  static std::unique_ptr<FakeServer> Start(const FakeConfig& config, std::string* error);
  // Stops serving, removes every sandbox and, if it made it, the root directory.
  ~FakeServer();

  int port() const { return port_; }
  // The ingress gateway's port (--ingress-gateway); 0 without one.
  int gateway_port() const { return gateway_ ? gateway_->port() : 0; }
  const std::string& root_dir() const { return root_dir_; }
  // Kills all sandboxes and removes the temp root, without waiting for connections
  // (for exiting the process from a signal).
  void EmergencyCleanup();

 private:
  FakeServer() = default;
  void InstallMiddleware();

  FakeConfig config_;
  std::shared_ptr<ServerStats> stats_ = std::make_shared<ServerStats>();
  std::shared_ptr<FaultState> faults_ = std::make_shared<FaultState>();
  std::unique_ptr<SnapshotStore> snapshots_;
  std::unique_ptr<SandboxRegistry> registry_;
  std::unique_ptr<IngressGateway> gateway_;
  LifecycleContext context_;
  httplib::Server server_;
  std::thread listener_;
  std::atomic<bool> stopping_{false};
  std::string root_dir_;
  bool owns_root_ = false;
  int port_ = 0;
};

}  // namespace fake_opensandbox
