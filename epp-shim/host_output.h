#pragma once

// The host's stdout, written without ever blocking the shim's one thread: a line is
// written at once when nothing waits before it (the usual case, and then it is not
// copied), and whatever the host does not take yet waits in a buffer that the event loop
// writes out when the descriptor is writable again. pending_bytes() is what the loop
// watches to hold back the bridge (grpc_connection.h) while the host does not read.
//
// Non-blocking writes without touching the host's end: O_NONBLOCK is a flag of the open
// file description, which the host (or a shell) may share, so it is never set on fd 1
// itself. A pipe is opened anew through /proc/self/fd (a description of our own, with
// O_NONBLOCK); a socket (e.g. libuv's stdio) is written with send(MSG_DONTWAIT); a
// regular file, a terminal or /dev/null is written as it is, blocking (they do not hold
// the shim up for long).
//
// After a write error (EPIPE: the host stopped reading for good) later output is
// dropped, once logged: nobody can read it.

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace abx {

class HostOutput {
 public:
  explicit HostOutput(int fd);
  ~HostOutput();
  HostOutput(const HostOutput&) = delete;
  HostOutput& operator=(const HostOutput&) = delete;

  // Writes `line` and a '\n', or queues what cannot be written now.
  void WriteLine(std::string_view line);
  // Writes what waits, as far as the descriptor takes it (on POLLOUT).
  void Flush();
  // Waits (poll) until everything is written, the output breaks, or the monotonic
  // clock reaches `deadline_ms`. True when nothing is left.
  bool FlushUntil(int64_t deadline_ms);

  // The descriptor to poll for POLLOUT while pending_bytes() > 0.
  int fd() const { return fd_; }
  size_t pending_bytes() const { return pending_.size() - pending_at_; }
  bool broken() const { return broken_; }

 private:
  enum class Mode { kNonBlocking, kSocket, kBlocking };

  // Writes from `data`; the number of bytes taken (0 when it would block), -1 on error.
  ssize_t WriteSome(const char* data, size_t size);
  ssize_t WriteLineSome(std::string_view line);
  void Break();

  int fd_;
  bool owns_fd_ = false;
  Mode mode_ = Mode::kBlocking;
  std::string pending_;
  size_t pending_at_ = 0;
  bool broken_ = false;
};

}  // namespace abx
