#pragma once

// Debian's cpp-httplib is a compiled library that listens with a backlog of 5
// (CPPHTTPLIB_LISTEN_BACKLOG is fixed inside libcpp-httplib.so). When many clients
// connect at once (64 sessions' first commands, the bridge opening an execd connection
// for each), the kernel's accept queue overflows and drops the handshakes it has no room
// for; each such client waits for a retransmission, 1 s and then 3 s later, which put
// 1-4.5 s tails into the concurrency benchmark (netstat's ListenOverflows counted them).
// Real execd and the real server are Go programs that listen with the system's maximum
// (net.core.somaxconn), so the fake does the same: it remembers its listening socket
// through httplib's socket-options hook and calls listen() again once bound, which on
// Linux only raises the backlog of a socket that is already listening.

#include <httplib.h>

#include <memory>

namespace fake_opensandbox {

class ListenBacklog {
 public:
  // Installs httplib's default socket options on `server`, remembering the socket they
  // are applied to. Call before bind_to_port / bind_to_any_port.
  explicit ListenBacklog(httplib::Server& server);

  // After a successful bind: raises the listening socket's backlog to SOMAXCONN (the
  // kernel caps it at net.core.somaxconn). False when there is no socket or listen fails.
  bool Raise() const;

 private:
  std::shared_ptr<int> socket_ = std::make_shared<int>(-1);
};

}  // namespace fake_opensandbox
