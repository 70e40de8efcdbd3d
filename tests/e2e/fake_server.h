#pragma once

// The fake OpenSandbox server (//tests/fake-opensandbox) as a child process: started on
// a loopback port it picks itself, driven through its control endpoint (/_fake/...).

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "tests/e2e/process.h"

namespace abx::e2e {

struct FakeStats {
  int64_t connections_accepted = 0;
  int64_t live_sandboxes = 0;
  int64_t requests = 0;
  int64_t execd_connections_accepted = 0;
  // Also read when the fake reports them (0 when absent).
  int64_t execd_requests = 0;
  int64_t server_proxy_upstream_connections = 0;
  int64_t code_runs_active = 0;  // /code runs whose kernel still works
  int64_t kernels_alive = 0;
  int64_t session_runs_active = 0;  // bash session runs whose output pipe is still open
  int64_t auth_rejected = 0;  // lifecycle requests refused for a missing or wrong key
  int64_t snapshots = 0;      // every snapshot the server holds, whatever its state
  int64_t egress_requests_with_execd_token = 0;  // egress sidecar requests carrying it
  int64_t gateway_requests = 0;  // requests the ingress gateway passed on to a sandbox
};

struct HttpResponse {
  int status = 0;  // 0 when no answer
  std::map<std::string, std::string> headers;  // names lower-cased
  std::string body;
};

class FakeServer {
 public:
  // Starts the fake with `--port 0` and `flags` (e.g. {"--api-key", "k",
  // "--execd-version", "1.0.16"}), stdout and stderr into `log_path`, and waits for its
  // "listening on 127.0.0.1:PORT" line.
  static std::unique_ptr<FakeServer> Start(const std::vector<std::string>& flags,
                                           const std::string& log_path, std::string* error);
  // Stops the server (SIGTERM, then SIGKILL).
  ~FakeServer();

  int port() const { return port_; }
  // http://127.0.0.1:PORT
  std::string base_url() const;
  pid_t pid() const { return process_->pid(); }
  const std::string& log_path() const { return log_path_; }

  // GET /_fake/stats.
  std::optional<FakeStats> Stats(std::string* error = nullptr);
  // POST /_fake/faults with a JSON object ({"latency_ms":200,"error_rate":0.5}).
  bool SetFaults(const std::string& json, std::string* error = nullptr);
  // DELETE /_fake/faults.
  bool ClearFaults(std::string* error = nullptr);
  // Any request to the fake (control or API). The API key given at Start, if any, is sent.
  HttpResponse Http(const std::string& method, const std::string& path,
                    const std::string& body = "", Millis timeout = Millis(5000));

  ExitStatus Stop();

 private:
  FakeServer() = default;
  void DrainStdout();

  std::unique_ptr<Process> process_;
  int port_ = 0;
  std::string api_key_;
  std::string log_path_;
  int log_fd_ = -1;
  std::string pending_output_;  // stdout read past the first line, before the drain
  std::atomic<bool> stopping_{false};
  std::thread drain_thread_;
};

// A raw HTTP/1.1 exchange with 127.0.0.1:port (Connection: close). A "Host" among
// `headers` replaces the default one (127.0.0.1:port).
HttpResponse HttpRequest(int port, const std::string& method, const std::string& path,
                         const std::vector<std::pair<std::string, std::string>>& headers,
                         const std::string& body, Millis timeout);

}  // namespace abx::e2e
