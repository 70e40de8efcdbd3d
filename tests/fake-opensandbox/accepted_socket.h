#pragma once

// The socket of the connection a cpp-httplib handler serves. httplib hands a handler
// only the parsed request, while a WebSocket upgrade must take the connection over: the
// socket is the one whose local and peer addresses are the request's, found among this
// process's descriptors.

#include <httplib.h>

namespace fake_opensandbox {

// The descriptor (still httplib's: dup it to keep it), or -1 when none matches.
int AcceptedSocketOf(const httplib::Request& req);

}  // namespace fake_opensandbox
