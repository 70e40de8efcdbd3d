#include "bench/line_reader.h"

#include <errno.h>
#include <poll.h>
#include <unistd.h>

#include <cstring>

#include "bench/clock.h"

namespace abx::bench {

bool LineReader::Next(char** line, size_t* size, int timeout_ms, bool* timed_out) {
  if (timed_out) *timed_out = false;
  const int64_t deadline = NowNs() + static_cast<int64_t>(timeout_ms) * 1000000;
  for (;;) {
    if (scanned_ < begin_) scanned_ = begin_;
    if (void* nl = std::memchr(buffer_.data() + scanned_, '\n', end_ - scanned_)) {
      char* start = buffer_.data() + begin_;
      char* stop = static_cast<char*>(nl);
      *stop = '\0';
      *line = start;
      *size = static_cast<size_t>(stop - start);
      begin_ = static_cast<size_t>(stop - buffer_.data()) + 1;
      scanned_ = begin_;
      return true;
    }
    scanned_ = end_;
    // Make room: move the partial line to the front, grow when it fills the buffer.
    if (begin_ > 0) {
      std::memmove(buffer_.data(), buffer_.data() + begin_, end_ - begin_);
      end_ -= begin_;
      scanned_ -= begin_;
      begin_ = 0;
    }
    if (buffer_.size() - end_ < (256 << 10)) buffer_.resize(buffer_.size() * 2);

    const int64_t left_ms = (deadline - NowNs()) / 1000000;
    if (left_ms <= 0) {
      if (timed_out) *timed_out = true;
      return false;
    }
    pollfd pfd{fd_, POLLIN, 0};
    const int ready = poll(&pfd, 1, static_cast<int>(left_ms));
    if (ready < 0 && errno == EINTR) continue;
    if (ready < 0) return false;
    if (ready == 0) continue;  // the deadline check above ends the wait
    // 16 bytes stay free past the data: the NUL put at a line's end and room for readers that
    // scan in aligned 16-byte blocks (notification_reader.h).
    const ssize_t n = read(fd_, buffer_.data() + end_, buffer_.size() - end_ - 16);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    end_ += static_cast<size_t>(n);
    bytes_read_ += static_cast<size_t>(n);
  }
}

}  // namespace abx::bench
