#pragma once

// A terminal's WebSocket as execd serves it (docs/opensandbox.md §2.16): the handshake on
// the connection httplib accepted, then the replay frame (0x03 + 8-byte big-endian
// offset + bytes) if there is one, `connected`, live output frames (0x01 stdout, 0x02
// stderr), and `exit` followed by close 1000; from the client: 0x00 stdin, and JSON
// stdin, resize, signal and ping frames. Pings every 30 s; 60 s without a frame from the
// client ends the connection. The only file of the fake that knows Boost.Beast.

#include <httplib.h>

#include <memory>

#include "tests/fake-opensandbox/pty_sessions.h"

namespace fake_opensandbox {

struct PtySocketOptions {
  bool pipe_mode = false;  // ?pty=0: used only when this connection starts the process
  uint64_t since = 0;      // ?since=N
  bool takeover = false;   // ?takeover=1
  uint64_t drop_after_bytes = 0;  // > 0: the connection is dropped (no close frame) after this much output
  int64_t stall_reads_ms = 0;     // > 0: nothing is read from the client for this long after connecting
  int64_t stale_hold_ms = 0;      // > 0: a drop (drop_after_bytes) leaves the session held this long
};

// Takes the connection of `req` over (its descriptor `socket_fd` is dup'ed; httplib's
// own is shut down when this returns, so nothing it writes afterwards reaches the
// client) and serves the terminal until the connection ends.
void ServePtyWebSocket(int socket_fd, const httplib::Request& req, std::shared_ptr<PtySession> session,
                       const PtyStart& start, const PtySocketOptions& options);

}  // namespace fake_opensandbox
