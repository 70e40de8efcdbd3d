#include "tests/fake-opensandbox/upgrade_tunnel.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <string>

#include "tests/fake-opensandbox/accepted_socket.h"

namespace fake_opensandbox {
namespace {

bool HasToken(const httplib::Request& req, const char* name, const char* token) {
  std::string value = req.get_header_value(name);
  for (char& c : value) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return value.find(token) != std::string::npos;
}

int ConnectLocal(int port) {
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(static_cast<uint16_t>(port));
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (connect(fd, reinterpret_cast<const sockaddr*>(&address), sizeof address) != 0) {
    close(fd);
    return -1;
  }
  const int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);  // keystrokes go at once
  return fd;
}

bool WriteAll(int fd, const char* data, size_t size) {
  while (size > 0) {
    const ssize_t wrote = send(fd, data, size, MSG_NOSIGNAL);
    if (wrote < 0 && errno == EINTR) continue;
    if (wrote <= 0) return false;
    data += wrote;
    size -= static_cast<size_t>(wrote);
  }
  return true;
}

// Copies both ways until one side ends; then both are shut down, so the other side
// sees the end too.
void Join(int client, int upstream) {
  char buffer[64 << 10];
  pollfd fds[2] = {{client, POLLIN, 0}, {upstream, POLLIN, 0}};
  for (;;) {
    if (poll(fds, 2, -1) < 0) {
      if (errno == EINTR) continue;
      break;
    }
    bool ended = false;
    for (int i = 0; i < 2 && !ended; ++i) {
      if ((fds[i].revents & (POLLIN | POLLHUP | POLLERR)) == 0) continue;
      const ssize_t got = recv(fds[i].fd, buffer, sizeof buffer, 0);
      if (got < 0 && errno == EINTR) continue;
      ended = got <= 0 || !WriteAll(fds[1 - i].fd, buffer, static_cast<size_t>(got));
    }
    if (ended) break;
  }
  shutdown(client, SHUT_RDWR);
  shutdown(upstream, SHUT_RDWR);
}

}  // namespace

bool IsWebSocketUpgrade(const httplib::Request& req) {
  return req.method == "GET" && HasToken(req, "Upgrade", "websocket") && HasToken(req, "Connection", "upgrade");
}

bool TunnelUpgrade(const httplib::Request& req, const ForwardTarget& target) {
  const int accepted = AcceptedSocketOf(req);
  if (accepted < 0) return false;
  const int upstream = ConnectLocal(target.port);
  if (upstream < 0) return false;
  if (target.connection_counter) target.connection_counter->fetch_add(1);
  std::string head = "GET " + target.path_and_query + " HTTP/1.1\r\nHost: 127.0.0.1:" +
                     std::to_string(target.port) + "\r\nConnection: Upgrade\r\nUpgrade: " +
                     req.get_header_value("Upgrade") + "\r\n";
  for (const auto& [name, value] : ForwardedHeaders(req, target)) head += name + ": " + value + "\r\n";
  head += "\r\n";
  if (WriteAll(upstream, head.data(), head.size())) {
    const int one = 1;
    setsockopt(accepted, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    Join(accepted, upstream);
  } else {
    shutdown(accepted, SHUT_RDWR);
  }
  close(upstream);
  return true;
}

}  // namespace fake_opensandbox
