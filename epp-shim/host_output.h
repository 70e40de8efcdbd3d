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
// O_NONBLOCK; the pipe's buffer is enlarged to 256 KiB, see host_output.cc); a socket
// (e.g. libuv's stdio) is written with send(MSG_DONTWAIT); a regular file, a terminal or
// /dev/null is written as it is, blocking (they do not hold the shim up for long).
//
// After a write error (EPIPE: the host stopped reading for good) later output is
// dropped, once logged: nobody can read it.

#include <sys/types.h>
#include <sys/uio.h>

#include <cstddef>
#include <cstdint>
#include <deque>
#include <memory>
#include <string_view>
#include <vector>

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
  size_t pending_bytes() const { return pending_bytes_; }
  bool broken() const { return broken_; }

 private:
  enum class Mode { kNonBlocking, kSocket, kBlocking };

  // What waits is kept in fixed blocks, not one growing buffer: memory follows what is
  // pending (a doubling string held up to twice that), nothing is moved as the front is
  // written, and the blocks stay below malloc's mmap threshold, so they are reused from
  // the heap instead of being mapped and faulted in again each time.
  static constexpr size_t kBlockBytes = 64 << 10;
  // Emptied blocks kept for reuse (1 MiB), as many as the hold mark needs.
  static constexpr size_t kSpareBlocks = 16;
  struct Block {
    std::unique_ptr<char[]> data{new char[kBlockBytes]};
    size_t begin = 0;  // first byte not yet written
    size_t end = 0;    // first byte not yet filled
  };

  // Writes `parts`; the number of bytes taken (0 when it would block), -1 on error.
  ssize_t WriteSome(const iovec* parts, int count);
  void Append(const char* data, size_t size);
  void Break();

  int fd_;
  bool owns_fd_ = false;
  Mode mode_ = Mode::kBlocking;
  std::deque<Block> pending_;
  std::vector<Block> spare_;
  size_t pending_bytes_ = 0;
  bool broken_ = false;
};

}  // namespace abx
