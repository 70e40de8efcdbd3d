#include "tests/e2e/fake_server.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cctype>
#include <cstdlib>
#include <sstream>

#include "rapidjson/document.h"
#include "tests/e2e/json_util.h"
#include "tests/e2e/runfiles.h"

namespace abx::e2e {
namespace {

std::string Lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

// Decodes an HTTP/1.1 chunked body; returns what it could when malformed.
std::string Dechunk(const std::string& body) {
  std::string out;
  size_t pos = 0;
  while (pos < body.size()) {
    size_t eol = body.find("\r\n", pos);
    if (eol == std::string::npos) break;
    size_t length = std::strtoul(body.substr(pos, eol - pos).c_str(), nullptr, 16);
    if (length == 0) break;
    pos = eol + 2;
    out.append(body, pos, length);
    pos += length + 2;
  }
  return out;
}

}  // namespace

HttpResponse HttpRequest(int port, const std::string& method, const std::string& path,
                         const std::vector<std::pair<std::string, std::string>>& headers,
                         const std::string& body, Millis timeout) {
  IgnoreSigpipe();
  HttpResponse response;
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return response;
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(static_cast<uint16_t>(port));
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0) {
    ::close(fd);
    return response;
  }
  std::string host = "127.0.0.1:" + std::to_string(port);
  for (const auto& [name, value] : headers) {
    if (name == "Host") host = value;
  }
  std::string request = method + " " + path + " HTTP/1.1\r\nHost: " + host + "\r\nConnection: close\r\n";
  for (const auto& [name, value] : headers) {
    if (name != "Host") request += name + ": " + value + "\r\n";
  }
  if (!body.empty() || method == "POST" || method == "PUT") {
    request += "Content-Type: application/json\r\nContent-Length: " +
               std::to_string(body.size()) + "\r\n";
  }
  request += "\r\n" + body;
  if (!WriteAll(fd, request.data(), request.size())) {
    ::close(fd);
    return response;
  }
  std::string raw;
  const auto deadline = Clock::now() + timeout;
  char buffer[8192];
  while (Clock::now() < deadline) {
    auto left = std::chrono::duration_cast<Millis>(deadline - Clock::now());
    if (!WaitReadable(fd, left)) break;
    ssize_t n = ::read(fd, buffer, sizeof buffer);
    if (n <= 0) break;
    raw.append(buffer, static_cast<size_t>(n));
    // Stop early once a Content-Length body is complete (servers may linger).
    size_t end = raw.find("\r\n\r\n");
    if (end != std::string::npos) {
      std::string head = Lower(raw.substr(0, end));
      size_t cl = head.find("content-length:");
      if (cl != std::string::npos &&
          raw.size() >= end + 4 + std::strtoul(head.c_str() + cl + 15, nullptr, 10)) {
        break;
      }
    }
  }
  ::close(fd);
  size_t end = raw.find("\r\n\r\n");
  if (raw.compare(0, 5, "HTTP/") != 0 || end == std::string::npos) return response;
  std::istringstream head(raw.substr(0, end));
  std::string line;
  std::getline(head, line);
  size_t space = line.find(' ');
  if (space != std::string::npos) response.status = std::atoi(line.c_str() + space + 1);
  while (std::getline(head, line)) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    size_t colon = line.find(':');
    if (colon == std::string::npos) continue;
    std::string value = line.substr(colon + 1);
    while (!value.empty() && value.front() == ' ') value.erase(0, 1);
    response.headers[Lower(line.substr(0, colon))] = value;
  }
  response.body = raw.substr(end + 4);
  if (Lower(response.headers["transfer-encoding"]) == "chunked") {
    response.body = Dechunk(response.body);
  } else if (auto it = response.headers.find("content-length"); it != response.headers.end()) {
    size_t length = std::strtoul(it->second.c_str(), nullptr, 10);
    if (response.body.size() > length) response.body.resize(length);
  }
  return response;
}

std::unique_ptr<FakeServer> FakeServer::Start(const std::vector<std::string>& flags,
                                              const std::string& log_path,
                                              std::string* error) {
  std::unique_ptr<FakeServer> server(new FakeServer());
  server->log_path_ = log_path;
  Process::Options options;
  options.argv = {FakeServerBinary(), "--port", "0"};
  for (size_t i = 0; i < flags.size(); ++i) {
    options.argv.push_back(flags[i]);
    if (flags[i] == "--api-key" && i + 1 < flags.size()) server->api_key_ = flags[i + 1];
  }
  // The fake is ours, not the product: its argv may carry the test key.
  options.env = {"PATH=/usr/bin:/bin"};
  if (const char* tmp = std::getenv("TEST_TMPDIR")) options.env.push_back(std::string("TMPDIR=") + tmp);
  options.pipe_stdout = true;
  options.output_file = log_path;
  server->process_ = Process::Start(options, error);
  if (!server->process_) return nullptr;

  // First stdout line: "listening on 127.0.0.1:PORT".
  std::string first;
  const auto deadline = Clock::now() + Millis(15000);
  char buffer[4096];
  while (first.find('\n') == std::string::npos) {
    auto left = std::chrono::duration_cast<Millis>(deadline - Clock::now());
    if (left.count() <= 0 || !WaitReadable(server->process_->stdout_fd(), left)) {
      *error = "fake-opensandbox printed no \"listening on\" line within 15 s; log: " +
               ReadFile(log_path, 4000);
      return nullptr;
    }
    ssize_t n = ::read(server->process_->stdout_fd(), buffer, sizeof buffer);
    if (n <= 0) {
      auto status = server->process_->WaitExit(Millis(1000));
      *error = "fake-opensandbox closed stdout before its \"listening on\" line (" +
               (status ? status->ToString() : std::string("still running")) +
               "); log: " + ReadFile(log_path, 4000);
      return nullptr;
    }
    first.append(buffer, static_cast<size_t>(n));
  }
  size_t newline = first.find('\n');
  std::string line = first.substr(0, newline);
  server->pending_output_ = first.substr(newline + 1);
  const std::string prefix = "listening on 127.0.0.1:";
  if (line.compare(0, prefix.size(), prefix) != 0 ||
      (server->port_ = std::atoi(line.c_str() + prefix.size())) <= 0) {
    *error = "fake-opensandbox's first line is not \"listening on 127.0.0.1:PORT\": \"" +
             line + "\"";
    return nullptr;
  }
  server->log_fd_ = ::open(log_path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
  server->drain_thread_ = std::thread([s = server.get()] { s->DrainStdout(); });
  return server;
}

void FakeServer::DrainStdout() {
  if (log_fd_ >= 0 && !pending_output_.empty()) {
    WriteAll(log_fd_, pending_output_.data(), pending_output_.size());
  }
  char buffer[8192];
  // Polls so that a descendant of the fake still holding the pipe cannot block Stop().
  while (!stopping_) {
    if (!WaitReadable(process_->stdout_fd(), Millis(100))) continue;
    ssize_t n = ::read(process_->stdout_fd(), buffer, sizeof buffer);
    if (n <= 0) break;
    if (log_fd_ >= 0) WriteAll(log_fd_, buffer, static_cast<size_t>(n));
  }
}

FakeServer::~FakeServer() {
  Stop();
  if (log_fd_ >= 0) ::close(log_fd_);
}

ExitStatus FakeServer::Stop() {
  ExitStatus status = process_ ? process_->Stop() : ExitStatus{};
  stopping_ = true;
  if (drain_thread_.joinable()) drain_thread_.join();
  return status;
}

std::string FakeServer::base_url() const { return "http://127.0.0.1:" + std::to_string(port_); }

HttpResponse FakeServer::Http(const std::string& method, const std::string& path,
                              const std::string& body, Millis timeout) {
  std::vector<std::pair<std::string, std::string>> headers;
  if (!api_key_.empty()) headers.emplace_back("OPEN-SANDBOX-API-KEY", api_key_);
  return HttpRequest(port_, method, path, headers, body, timeout);
}

std::optional<FakeStats> FakeServer::Stats(std::string* error) {
  HttpResponse response = Http("GET", "/_fake/stats");
  rapidjson::Document doc;
  std::string parse_error;
  if (response.status != 200 || !ParseJson(response.body, &doc, &parse_error) ||
      !doc.IsObject()) {
    if (error) {
      *error = "GET /_fake/stats: status " + std::to_string(response.status) + ", body \"" +
               Abbreviate(response.body, 300) + "\" " + parse_error;
    }
    return std::nullopt;
  }
  FakeStats stats;
  for (auto [name, field] :
       {std::pair<const char*, int64_t*>{"connections_accepted", &stats.connections_accepted},
        {"live_sandboxes", &stats.live_sandboxes},
        {"requests", &stats.requests},
        {"execd_connections_accepted", &stats.execd_connections_accepted}}) {
    const rapidjson::Value* v = Find(doc, name);
    if (!v || !v->IsInt64()) {
      if (error) *error = std::string("GET /_fake/stats: no integer \"") + name + "\" in " +
                          Abbreviate(response.body, 300);
      return std::nullopt;
    }
    *field = v->GetInt64();
  }
  stats.execd_requests = GetInt(doc, "execd_requests", 0);
  stats.auth_rejected = GetInt(doc, "auth_rejected", 0);
  stats.snapshots = GetInt(doc, "snapshots", 0);
  stats.egress_requests_with_execd_token = GetInt(doc, "egress_requests_with_execd_token", 0);
  stats.gateway_requests = GetInt(doc, "gateway_requests", 0);
  stats.server_proxy_upstream_connections = GetInt(doc, "server_proxy_upstream_connections", 0);
  stats.code_runs_active = GetInt(doc, "code_runs_active", 0);
  stats.kernels_alive = GetInt(doc, "kernels_alive", 0);
  stats.session_runs_active = GetInt(doc, "session_runs_active", 0);
  return stats;
}

bool FakeServer::SetFaults(const std::string& json, std::string* error) {
  HttpResponse response = Http("POST", "/_fake/faults", json);
  if (response.status / 100 != 2) {
    if (error) *error = "POST /_fake/faults " + json + ": status " +
                        std::to_string(response.status) + " " + Abbreviate(response.body, 300);
    return false;
  }
  return true;
}

bool FakeServer::ClearFaults(std::string* error) {
  HttpResponse response = Http("DELETE", "/_fake/faults");
  if (response.status / 100 != 2) {
    if (error) *error = "DELETE /_fake/faults: status " + std::to_string(response.status);
    return false;
  }
  return true;
}

}  // namespace abx::e2e
