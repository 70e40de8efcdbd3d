#pragma once

// Helpers for the shim's tests: short temporary directories (socket paths must fit in
// 108 bytes, so not under TEST_TMPDIR), a pipe-fed ShimSession, and the fake bridge
// binary's path in the runfiles.

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "common/line_reader.h"
#include "epp-shim/session.h"
#include "tests/common/temp_dir.h"

namespace abx::testing {

inline constexpr char kTestBuildId[] = "7e57b111d0000001";

// A TempDir that also stops any bridge left serving in it (its pid is in the lock file).
class ShortTempDir {
 public:
  ~ShortTempDir() {
    std::system(("for f in '" + dir_.path() + "'/*.lock; do [ -s \"$f\" ] && kill -9 $(cat \"$f\") "
                 "2>/dev/null; done").c_str());
  }
  const std::string& path() const { return dir_.path(); }

 private:
  TempDir dir_{"abxs"};
};

inline std::string FakeBridgeBinary() {
  const char* srcdir = getenv("TEST_SRCDIR");
  const char* workspace = getenv("TEST_WORKSPACE");
  if (srcdir == nullptr || workspace == nullptr) return "tests/epp-shim/fake_bridge";
  return std::string(srcdir) + "/" + workspace + "/tests/epp-shim/fake_bridge";
}

// Collects the lines a session writes to its output pipe.
class OutputCollector {
 public:
  OutputCollector() {
    int fds[2];
    if (pipe2(fds, O_CLOEXEC) != 0) abort();
    read_fd_ = fds[0];
    write_fd_ = fds[1];
    thread_ = std::thread([this] {
      LineReader reader(read_fd_);
      FramedLine line;
      while (reader.Next(&line)) {
        std::lock_guard<std::mutex> lock(mu_);
        lines_.push_back(line.data);
        cv_.notify_all();
      }
    });
  }
  ~OutputCollector() {
    CloseWriteEnd();
    thread_.join();
    close(read_fd_);
  }
  int write_fd() const { return write_fd_; }
  void CloseWriteEnd() {
    if (write_fd_ >= 0) close(write_fd_);
    write_fd_ = -1;
  }
  // Waits until at least `count` lines arrived; returns them all.
  std::vector<std::string> WaitFor(size_t count, int timeout_ms = 10000) {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait_for(lock, std::chrono::milliseconds(timeout_ms),
                 [&] { return lines_.size() >= count; });
    return lines_;
  }
  std::vector<std::string> lines() {
    std::lock_guard<std::mutex> lock(mu_);
    return lines_;
  }

 private:
  int read_fd_ = -1;
  int write_fd_ = -1;
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<std::string> lines_;
  std::thread thread_;
};

// A ShimSession on its own thread, fed through a pipe.
class SessionUnderTest {
 public:
  SessionUnderTest(BridgeClientOptions client_options, ResolvedConfig config = {})
      : client_(std::move(client_options)) {
    int fds[2];
    if (pipe2(fds, O_CLOEXEC) != 0) abort();
    input_read_ = fds[0];
    input_write_ = fds[1];
    ShimSession::Options options;
    options.shim_version = "test-version";
    options.build_id = kTestBuildId;
    options.resolve_config = [config] { return config; };
    options.on_exit = [this] {
      std::lock_guard<std::mutex> lock(mu_);
      exited_by_bridge_ = true;
    };
    session_ = std::make_unique<ShimSession>(&client_, output_.write_fd(), std::move(options));
    thread_ = std::thread([this] {
      int code = session_->Run(input_read_);
      std::lock_guard<std::mutex> lock(mu_);
      exit_code_ = code;
      done_ = true;
      cv_.notify_all();
    });
  }
  ~SessionUnderTest() {
    CloseInput();
    thread_.join();
    session_.reset();
    close(input_read_);
  }

  void Send(const std::string& line) {
    const std::string framed = line + "\n";
    if (write(input_write_, framed.data(), framed.size()) != static_cast<ssize_t>(framed.size())) {
      abort();
    }
  }
  void SendRaw(const std::string& bytes) {
    size_t at = 0;
    while (at < bytes.size()) {
      ssize_t wrote = write(input_write_, bytes.data() + at, bytes.size() - at);
      if (wrote <= 0) abort();
      at += static_cast<size_t>(wrote);
    }
  }
  void CloseInput() {
    if (input_write_ >= 0) close(input_write_);
    input_write_ = -1;
  }
  // Waits for Run to return; false on timeout.
  bool WaitDone(int timeout_ms) {
    std::unique_lock<std::mutex> lock(mu_);
    return cv_.wait_for(lock, std::chrono::milliseconds(timeout_ms), [&] { return done_; });
  }
  bool exited_by_bridge() {
    std::lock_guard<std::mutex> lock(mu_);
    return exited_by_bridge_;
  }
  int exit_code() {
    std::lock_guard<std::mutex> lock(mu_);
    return exit_code_;
  }
  OutputCollector& output() { return output_; }

 private:
  BridgeClient client_;
  OutputCollector output_;
  std::unique_ptr<ShimSession> session_;
  int input_read_ = -1;
  int input_write_ = -1;
  std::thread thread_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool done_ = false;
  bool exited_by_bridge_ = false;
  int exit_code_ = -1;
};

// Options for a client of `socket_path` whose bridge binary is the fake bridge.
inline BridgeClientOptions TestClientOptions(const std::string& socket_path) {
  BridgeClientOptions options;
  options.build_id = kTestBuildId;
  options.socket_path = socket_path;
  options.explicit_socket = true;
  options.bridge_binary = FakeBridgeBinary();
  options.start_timeout_ms = 10000;
  options.hello_timeout_ms = 2000;
  return options;
}

}  // namespace abx::testing
