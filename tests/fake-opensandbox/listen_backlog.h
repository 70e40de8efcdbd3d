#pragma once

// Binding the fake's listeners with a full listen backlog.
//
// cpp-httplib listens with a backlog of 5 (CPPHTTPLIB_LISTEN_BACKLOG, fixed in Debian's
// build of the library). When more connections arrive at once than the accepting thread
// takes in, the kernel drops the extra SYNs and each client waits for its retransmission
// (1 s, then 3 s more): a bridge opening tens of connections at once to a slow fake (under
// ThreadSanitizer, or on a loaded machine) timed out connecting after its 5 s. httplib
// hands us the listening socket before it binds it (set_socket_options); listen() again
// after the bind raises the backlog to the system's limit.

#include <httplib.h>

namespace fake_opensandbox {

// Binds `server` to 127.0.0.1:`port` (0: any free port) with the largest backlog the
// system allows. Returns the port, or -1 when it cannot bind.
int BindWithFullBacklog(httplib::Server& server, int port);

}  // namespace fake_opensandbox
