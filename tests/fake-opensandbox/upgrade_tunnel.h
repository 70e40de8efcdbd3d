#pragma once

// The server proxy's WebSocket path (docs/opensandbox.md §1.10), as upstream's proxy.py
// does it: the upgrade is passed to the sandbox's listener; when execd takes it (101),
// its answer reaches the client and the two connections are joined byte for byte, so
// every frame and execd's own close codes (1000, 4001) pass as execd sent them. When
// execd refuses the handshake (its 401, 404, 409) the proxy still completes the client's
// upgrade and closes it with 1008 and an empty reason; when execd cannot be reached,
// with 1011. The client never sees execd's status.

#include <cstdint>

#include <httplib.h>

#include "tests/fake-opensandbox/http_forwarder.h"

namespace fake_opensandbox {

// Whether `req` asks for a WebSocket (GET, "Upgrade: websocket", "Connection: upgrade").
bool IsWebSocketUpgrade(const httplib::Request& req);

// Takes the connection of `req` over and serves it as above (httplib's own answer,
// written after this returns, reaches nobody). False, with the connection untouched,
// only when the request's own socket cannot be found.
bool TunnelUpgrade(const httplib::Request& req, const ForwardTarget& target);

// Completes the client's upgrade and closes it with `code` (1008, 1011) and an empty
// reason, as the proxy answers what it cannot pass on. False when the request's socket
// cannot be found.
bool RefuseUpgrade(const httplib::Request& req, uint16_t code);

}  // namespace fake_opensandbox
