#include "tests/fake-opensandbox/upstream_client.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <strings.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

namespace fake_opensandbox {
namespace {

constexpr size_t kReadBytes = 256 << 10;
constexpr size_t kMaxHeadBytes = 64 << 10;

class Connection {
 public:
  ~Connection() {
    if (fd_ >= 0) close(fd_);
  }

  bool Open(int port) {
    fd_ = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd_ < 0) return false;
    timeval read_timeout = {3600, 0};
    setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &read_timeout, sizeof(read_timeout));
    timeval write_timeout = {60, 0};
    setsockopt(fd_, SOL_SOCKET, SO_SNDTIMEO, &write_timeout, sizeof(write_timeout));
    int one = 1;
    setsockopt(fd_, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    sockaddr_in addr = {};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(static_cast<uint16_t>(port));
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    return connect(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0;
  }

  bool WriteAll(const std::string& data) {
    size_t at = 0;
    while (at < data.size()) {
      ssize_t n = send(fd_, data.data() + at, data.size() - at, MSG_NOSIGNAL);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) return false;
      at += static_cast<size_t>(n);
    }
    return true;
  }

  // Unread bytes.
  size_t available() const { return buffer_.size() - pos_; }
  const char* data() const { return buffer_.data() + pos_; }
  void Consume(size_t n) { pos_ += n; }

  // Reads more bytes; false on EOF or error.
  bool Fill() {
    if (pos_ > 0 && pos_ == buffer_.size()) {
      buffer_.clear();
      pos_ = 0;
    } else if (pos_ > kReadBytes) {
      buffer_.erase(0, pos_);
      pos_ = 0;
    }
    size_t old = buffer_.size();
    buffer_.resize(old + kReadBytes);
    ssize_t n;
    do {
      n = recv(fd_, &buffer_[old], kReadBytes, 0);
    } while (n < 0 && errno == EINTR);
    buffer_.resize(old + (n > 0 ? static_cast<size_t>(n) : 0));
    return n > 0;
  }

  // Reads a CRLF-terminated line (without the CRLF).
  bool ReadLine(std::string* line) {
    for (;;) {
      const char* start = data();
      const char* end = static_cast<const char*>(memchr(start, '\n', available()));
      if (end) {
        size_t length = static_cast<size_t>(end - start);
        line->assign(start, length > 0 && start[length - 1] == '\r' ? length - 1 : length);
        Consume(length + 1);
        return true;
      }
      if (available() > kMaxHeadBytes || !Fill()) return false;
    }
  }

 private:
  int fd_ = -1;
  std::string buffer_;
  size_t pos_ = 0;
};

bool HasToken(const std::string& value, const char* token) {
  std::string lower = value;
  for (auto& c : lower) c = static_cast<char>(tolower(static_cast<unsigned char>(c)));
  return lower.find(token) != std::string::npos;
}

// Hands over up to `remaining` body bytes (all until EOF when remaining < 0).
bool RelayBody(Connection& conn, long long remaining, const UpstreamHandlers& handlers) {
  for (;;) {
    if (remaining == 0) return true;
    if (conn.available() == 0 && !conn.Fill()) return remaining < 0;  // EOF
    size_t n = conn.available();
    if (remaining > 0 && static_cast<long long>(n) > remaining) n = static_cast<size_t>(remaining);
    if (!handlers.on_body(conn.data(), n)) return false;
    conn.Consume(n);
    if (remaining > 0) remaining -= static_cast<long long>(n);
  }
}

bool RelayChunked(Connection& conn, const UpstreamHandlers& handlers) {
  std::string line;
  for (;;) {
    if (!conn.ReadLine(&line)) return false;
    char* end = nullptr;
    long long size = strtoll(line.c_str(), &end, 16);
    if (end == line.c_str() || size < 0) return false;
    if (size == 0) {  // trailers up to the empty line
      while (conn.ReadLine(&line)) {
        if (line.empty()) return true;
      }
      return false;
    }
    if (!RelayBody(conn, size, handlers)) return false;
    if (!conn.ReadLine(&line) || !line.empty()) return false;
  }
}

}  // namespace

bool SendUpstream(int port, const UpstreamRequest& request, const UpstreamHandlers& handlers) {
  Connection conn;
  if (!conn.Open(port)) return false;
  std::string head = request.method + " " + request.path_and_query + " HTTP/1.1\r\n";
  head += "Host: 127.0.0.1:" + std::to_string(port) + "\r\n";
  for (const auto& [name, value] : request.headers) head += name + ": " + value + "\r\n";
  if (!request.body.empty() || request.method == "POST" || request.method == "PUT" ||
      request.method == "PATCH") {
    head += "Content-Length: " + std::to_string(request.body.size()) + "\r\n";
  }
  head += "Connection: close\r\n\r\n";
  if (!conn.WriteAll(head) || !conn.WriteAll(request.body)) return false;

  std::string line;
  if (!conn.ReadLine(&line)) return false;
  // "HTTP/1.1 200 OK"
  size_t space = line.find(' ');
  if (line.compare(0, 5, "HTTP/") != 0 || space == std::string::npos) return false;
  int status = atoi(line.c_str() + space + 1);
  if (status < 100 || status > 999) return false;
  httplib::Headers headers;
  long long content_length = -1;
  bool chunked = false;
  for (;;) {
    if (!conn.ReadLine(&line)) return false;
    if (line.empty()) break;
    size_t colon = line.find(':');
    if (colon == std::string::npos) continue;
    std::string name = line.substr(0, colon);
    size_t value_start = line.find_first_not_of(" \t", colon + 1);
    std::string value = value_start == std::string::npos ? "" : line.substr(value_start);
    if (strcasecmp(name.c_str(), "Content-Length") == 0) content_length = atoll(value.c_str());
    if (strcasecmp(name.c_str(), "Transfer-Encoding") == 0 && HasToken(value, "chunked")) {
      chunked = true;
    }
    headers.emplace(name, value);
  }
  if (!handlers.on_head(status, headers)) return false;
  if (request.method == "HEAD" || status == 204 || status == 304 || status < 200) return true;
  if (chunked) return RelayChunked(conn, handlers);
  return RelayBody(conn, content_length, handlers);
}

}  // namespace fake_opensandbox
