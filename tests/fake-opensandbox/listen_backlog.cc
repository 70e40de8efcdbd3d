#include "tests/fake-opensandbox/listen_backlog.h"

#include <sys/socket.h>

namespace fake_opensandbox {

ListenBacklog::ListenBacklog(httplib::Server& server) {
  server.set_socket_options([socket = socket_](socket_t fd) {
    httplib::default_socket_options(fd);
    // The last socket httplib tried is the one it bound (a failed bind closes it and
    // tries the next address).
    *socket = fd;
  });
}

bool ListenBacklog::Raise() const { return *socket_ >= 0 && ::listen(*socket_, SOMAXCONN) == 0; }

}  // namespace fake_opensandbox
