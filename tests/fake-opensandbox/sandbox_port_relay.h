#pragma once

// A port of a sandbox that has a network of its own (real_execd.h), published on the
// host's loopback as a container runtime publishes one: every connection accepted on
// 127.0.0.1:<port()> is joined, byte for byte, to a new connection to 127.0.0.1:<target>
// inside the sandbox's network namespace. Nothing is parsed, so HTTP keep-alive, event
// streams and WebSockets pass exactly as the program in the sandbox sends them. A
// connection the sandbox refuses (nothing listens yet) is closed at once, as
// docker-proxy closes one.

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>

namespace fake_opensandbox {

// A TCP connection to 127.0.0.1:`port` inside the network namespace `netns_fd` (an open
// /proc/<pid>/ns/net); -1 with *error when it cannot be made.
int DialInNamespace(int netns_fd, int port, std::string* error);

class SandboxPortRelay {
 public:
  // `netns_fd` is borrowed: it must stay open as long as the relay. `accepted` (may be
  // null) counts the connections taken.
  static std::unique_ptr<SandboxPortRelay> Start(int netns_fd, int target_port,
                                                 std::atomic<uint64_t>* accepted, std::string* error);
  // The other way round: a listener at 127.0.0.1:`inside_port` in the sandbox's network,
  // each connection joined to 127.0.0.1:`host_port` of the host, so a program of the fake
  // (the egress sidecar) serves inside the sandbox's network as if it ran there.
  static std::unique_ptr<SandboxPortRelay> StartInward(int netns_fd, int inside_port, int host_port,
                                                       std::string* error);
  // Stops listening and ends every joined connection.
  ~SandboxPortRelay();

  // The port it listens on (inside the sandbox's network for StartInward).
  int port() const { return port_; }

 private:
  struct State;
  SandboxPortRelay() = default;
  static std::unique_ptr<SandboxPortRelay> Run(std::shared_ptr<State> state, std::string* error);
  std::shared_ptr<State> state_;
  int port_ = 0;
};

}  // namespace fake_opensandbox
