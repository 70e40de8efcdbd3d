#include "tests/bridge/http/raw_server.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdlib>
#include <cstdio>
#include <string>

namespace abx::http::testing {
namespace {

int BoundSocket(int* port) {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) std::abort();
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  address.sin_port = 0;
  if (bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)) != 0) std::abort();
  socklen_t length = sizeof(address);
  getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length);
  *port = ntohs(address.sin_port);
  return fd;
}

// Reads up to the end of the request head (the body, if any, is not needed by scripts).
std::string ReadRequestHead(int fd) {
  std::string head;
  char buffer[4096];
  while (head.find("\r\n\r\n") == std::string::npos) {
    ssize_t n = read(fd, buffer, sizeof(buffer));
    if (n <= 0) break;
    head.append(buffer, static_cast<size_t>(n));
  }
  return head;
}

}  // namespace

RawServer::RawServer(std::function<bool(int fd)> respond) : respond_(std::move(respond)) {
  listen_fd_ = BoundSocket(&port_);
  if (listen(listen_fd_, 16) != 0 || pipe(stop_pipe_) != 0) std::abort();
  thread_ = std::thread([this] { Serve(); });
}

RawServer::~RawServer() {
  char byte = 0;
  if (write(stop_pipe_[1], &byte, 1) != 1) std::perror("stop pipe");
  thread_.join();
  close(listen_fd_);
  close(stop_pipe_[0]);
  close(stop_pipe_[1]);
}

void RawServer::Serve() {
  for (;;) {
    pollfd fds[2] = {{listen_fd_, POLLIN, 0}, {stop_pipe_[0], POLLIN, 0}};
    if (poll(fds, 2, -1) < 0) continue;
    if (fds[1].revents != 0) return;
    int fd = accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
    if (fd < 0) continue;
    ++connections_;
    std::string head = ReadRequestHead(fd);
    {
      std::lock_guard<std::mutex> lock(mu_);
      request_heads_.push_back(std::move(head));
    }
    if (respond_(fd)) close(fd);
  }
}

std::vector<std::string> RawServer::request_heads() {
  std::lock_guard<std::mutex> lock(mu_);
  return request_heads_;
}

bool RawServer::WriteAll(int fd, const std::string& data) {
  size_t done = 0;
  while (done < data.size()) {
    ssize_t n = send(fd, data.data() + done, data.size() - done, MSG_NOSIGNAL);
    if (n <= 0) return false;
    done += static_cast<size_t>(n);
  }
  return true;
}

void RawServer::Reset(int fd) {
  linger option{1, 0};
  setsockopt(fd, SOL_SOCKET, SO_LINGER, &option, sizeof(option));
  close(fd);
}

RefusingPort::RefusingPort() { fd_ = BoundSocket(&port_); }

RefusingPort::~RefusingPort() { close(fd_); }

}  // namespace abx::http::testing
