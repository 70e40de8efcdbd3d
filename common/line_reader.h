#pragma once

// EPP/1 framing: one message per line ending in '\n', at most 8 MiB (newline excluded).
//
// LineSplitter does the framing on bytes pushed into it, so a fuzzer or a test can feed
// it any chunking; LineReader pulls those bytes from a descriptor (the shim's stdin).
// A line longer than the limit is never held whole: past the limit only its first
// 64 KiB and its length are kept, and the rest is skipped up to its newline.
// Bytes are passed through untouched: a '\r' before the '\n' stays part of the line
// (the bridge decides what it means), and so does invalid UTF-8.

#include <cstddef>
#include <cstdint>
#include <deque>
#include <string>
#include <string_view>
#include <vector>

#include "common/limits.h"

namespace abx {


struct FramedLine {
  // False for a normal line (`data` is the whole line); true for a dropped oversized
  // line (`data` is its first bytes, `length` its full length).
  bool oversized = false;
  std::string data;
  uint64_t length = 0;  // full length of the line, newline excluded
};

class LineSplitter {
 public:
  explicit LineSplitter(size_t max_line_bytes = kMaxLineBytes,
                        size_t prefix_bytes = kOversizedPrefixBytes);

  // Consumes `size` bytes and appends every line they complete to `out`, in order.
  void Feed(const char* data, size_t size, std::vector<FramedLine>* out);

  // End of input: a pending line without its newline still counts as a line (unless
  // no byte of it arrived). The splitter is then empty and may be fed again.
  void Finish(std::vector<FramedLine>* out);

  // What arrived of the line not yet complete, while it is within the limit (empty once
  // it is past it: its bytes are being dropped).
  std::string_view pending() const { return dropping_ ? std::string_view() : current_; }

 private:
  void Append(const char* data, size_t size);
  void Complete(std::vector<FramedLine>* out);

  const size_t max_line_bytes_;
  const size_t prefix_bytes_;
  std::string current_;        // the pending line, or the prefix of an oversized one
  uint64_t current_length_ = 0;
  uint64_t last_length_ = 0;   // of the previous line: sizes the next large one
  static constexpr uint64_t kReserveFromBytes = 256 << 10;
  bool dropping_ = false;      // the pending line is past the limit
};

class LineReader {
 public:
  // Reads from `fd` (not owned), `read_size` bytes at most per read(2).
  explicit LineReader(int fd, size_t max_line_bytes = kMaxLineBytes,
                      size_t prefix_bytes = kOversizedPrefixBytes, size_t read_size = 65536);

  // Blocks for the next line. False at end of input (or on a read error: then
  // error() says which), once every line before it was returned.
  bool Next(FramedLine* line);

  const std::string& error() const { return error_; }

 private:
  int fd_;
  LineSplitter splitter_;
  std::vector<char> buffer_;
  std::vector<FramedLine> ready_;
  size_t next_ready_ = 0;
  bool at_end_ = false;
  std::string error_;
};

}  // namespace abx
