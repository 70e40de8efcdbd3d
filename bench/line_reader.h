#pragma once
// Reads '\n'-terminated lines from a pipe, with a deadline. Lines up to the EPP limit
// (8 MiB) and beyond are fine: the buffer grows as needed.

#include <cstddef>
#include <string>
#include <vector>

namespace abx::bench {

class LineReader {
 public:
  explicit LineReader(int fd) : fd_(fd) {}

  // The next line without its '\n', NUL-terminated in place (so it can be parsed in
  // situ; the bytes may be modified) and valid until the next call. False on end of
  // input, an error, or when `timeout_ms` passes first (`*timed_out` then set).
  bool Next(char** line, size_t* size, int timeout_ms, bool* timed_out = nullptr);

  // Bytes read from the pipe so far.
  size_t bytes_read() const { return bytes_read_; }

 private:
  int fd_;
  std::vector<char> buffer_ = std::vector<char>(1 << 20);
  size_t begin_ = 0, end_ = 0;  // unread bytes are buffer_[begin_, end_)
  size_t scanned_ = 0;          // buffer_[begin_, scanned_) holds no '\n'
  size_t bytes_read_ = 0;
};

}  // namespace abx::bench
