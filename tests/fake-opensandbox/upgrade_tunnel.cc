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

#include <boost/beast/websocket/detail/hybi13.hpp>

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

// What the server's proxy does when execd does not take the upgrade (proxy.py,
// _fail_client_websocket): it completes the client's handshake itself, then closes with
// `code` and an empty reason.
void AcceptAndClose(int client, const httplib::Request& req, uint16_t code) {
  boost::beast::websocket::detail::sec_ws_accept_type accept;
  boost::beast::websocket::detail::make_sec_ws_accept(accept, req.get_header_value("Sec-WebSocket-Key"));
  std::string answer = "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                       "Sec-WebSocket-Accept: " + std::string(accept.data(), accept.size()) + "\r\n\r\n";
  answer += {static_cast<char>(0x88), 2, static_cast<char>(code >> 8), static_cast<char>(code & 0xff)};
  WriteAll(client, answer.data(), answer.size());
  // The client's own close frame, if it sends one soon; then the connection ends.
  pollfd p{client, POLLIN, 0};
  char ignored[256];
  if (poll(&p, 1, 1000) > 0) recv(client, ignored, sizeof ignored, 0);
  shutdown(client, SHUT_RDWR);
}

// execd's answer to the upgrade, up to the end of its head (and whatever came with it);
// empty when it sent none.
std::string ReadAnswerHead(int upstream) {
  std::string head;
  char buffer[4096];
  while (head.find("\r\n\r\n") == std::string::npos && head.size() < (64 << 10)) {
    pollfd p{upstream, POLLIN, 0};
    if (poll(&p, 1, 10000) <= 0) return "";
    const ssize_t got = recv(upstream, buffer, sizeof buffer, 0);
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) return "";
    head.append(buffer, static_cast<size_t>(got));
  }
  return head;
}

}  // namespace

bool IsWebSocketUpgrade(const httplib::Request& req) {
  return req.method == "GET" && HasToken(req, "Upgrade", "websocket") && HasToken(req, "Connection", "upgrade");
}

bool RefuseUpgrade(const httplib::Request& req, uint16_t code) {
  const int accepted = AcceptedSocketOf(req);
  if (accepted < 0) return false;
  AcceptAndClose(accepted, req, code);
  return true;
}

bool TunnelUpgrade(const httplib::Request& req, const ForwardTarget& target) {
  const int accepted = AcceptedSocketOf(req);
  if (accepted < 0) return false;
  const int one = 1;
  setsockopt(accepted, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  const int upstream = ConnectLocal(target.port);
  if (upstream < 0) {  // proxy.py: an OSError reaching execd is 1011
    AcceptAndClose(accepted, req, 1011);
    return true;
  }
  if (target.connection_counter) target.connection_counter->fetch_add(1);
  std::string head = "GET " + target.path_and_query + " HTTP/1.1\r\nHost: 127.0.0.1:" +
                     std::to_string(target.port) + "\r\nConnection: Upgrade\r\nUpgrade: " +
                     req.get_header_value("Upgrade") + "\r\n";
  for (const auto& [name, value] : ForwardedHeaders(req, target)) head += name + ": " + value + "\r\n";
  head += "\r\n";
  const std::string answer = WriteAll(upstream, head.data(), head.size()) ? ReadAnswerHead(upstream) : "";
  if (answer.empty()) {
    AcceptAndClose(accepted, req, 1011);
  } else if (answer.compare(0, 12, "HTTP/1.1 101") != 0) {
    AcceptAndClose(accepted, req, 1008);  // websockets.InvalidStatus: execd's 401, 404, 409
  } else if (WriteAll(accepted, answer.data(), answer.size())) {
    Join(accepted, upstream);  // frames and execd's own close codes pass as they are
  } else {
    shutdown(accepted, SHUT_RDWR);
  }
  close(upstream);
  return true;
}

}  // namespace fake_opensandbox
