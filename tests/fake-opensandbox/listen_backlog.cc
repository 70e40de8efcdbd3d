#include "tests/fake-opensandbox/listen_backlog.h"

#include <sys/socket.h>

#include <memory>

namespace fake_opensandbox {

int BindWithFullBacklog(httplib::Server& server, int port) {
  auto listening = std::make_shared<int>(-1);
  server.set_socket_options([listening](socket_t sock) {
    httplib::default_socket_options(sock);
    *listening = sock;
  });
  int bound = -1;
  if (port == 0) {
    bound = server.bind_to_any_port("127.0.0.1");
  } else if (server.bind_to_port("127.0.0.1", port)) {
    bound = port;
  }
  if (bound > 0 && *listening >= 0) ::listen(*listening, SOMAXCONN);
  return bound > 0 ? bound : -1;
}

}  // namespace fake_opensandbox
