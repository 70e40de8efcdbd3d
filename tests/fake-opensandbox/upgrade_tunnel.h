#pragma once

// The server proxy's WebSocket path (docs/opensandbox.md §1.10): an upgrade request is
// passed to the sandbox's listener and, from then on, the two connections are joined
// byte for byte in both directions, the handshake's answer included. So whatever execd
// answers (101, its 404 or 409 before the upgrade) and every frame and close code reach
// the client as execd sent them; docs/mapping.md "Terminals" names this as an
// assumption about the real server.

#include <httplib.h>

#include "tests/fake-opensandbox/http_forwarder.h"

namespace fake_opensandbox {

// Whether `req` asks for a WebSocket (GET, "Upgrade: websocket", "Connection: upgrade").
bool IsWebSocketUpgrade(const httplib::Request& req);

// Takes the connection of `req` over and joins it to a new connection to the target,
// until either side ends (httplib's own answer, written after this returns, reaches
// nobody). False, with the connection untouched, when the target cannot be reached.
bool TunnelUpgrade(const httplib::Request& req, const ForwardTarget& target);

}  // namespace fake_opensandbox
