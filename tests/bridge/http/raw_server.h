#pragma once
// A TCP server on 127.0.0.1 (port 0) that answers each connection with a script: for
// replies a real HTTP server would not send, such as a body cut short or a reset.

#include <atomic>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace abx::http::testing {

class RawServer {
 public:
  // `respond` runs for each accepted connection after its request head has been read, with
  // the socket; the server closes it afterwards unless `respond` returned false (it closed
  // or reset it itself).
  explicit RawServer(std::function<bool(int fd)> respond);
  ~RawServer();

  int port() const { return port_; }
  int connections() const { return connections_.load(); }
  // The request heads received so far, in order.
  std::vector<std::string> request_heads();

  // Helpers for scripts.
  static bool WriteAll(int fd, const std::string& data);
  // Closes with SO_LINGER 0, so the peer sees a reset.
  static void Reset(int fd);

 private:
  void Serve();

  std::function<bool(int)> respond_;
  int listen_fd_ = -1;
  int stop_pipe_[2] = {-1, -1};
  int port_ = 0;
  std::atomic<int> connections_{0};
  std::mutex mu_;
  std::vector<std::string> request_heads_;
  std::thread thread_;
};

// A port on 127.0.0.1 where connections are refused: bound, never listening, held for the
// object's life so nothing else takes it.
class RefusingPort {
 public:
  RefusingPort();
  ~RefusingPort();
  int port() const { return port_; }

 private:
  int fd_ = -1;
  int port_ = 0;
};

}  // namespace abx::http::testing
