#pragma once

// execd's line framing of foreground command output (docs/opensandbox.md §2.7), one instance per
// stream (stdout, stderr):
//   * a line ends at '\n' or '\r'; "\r\n" is one terminator, also across reads;
//   * the terminator is not part of the event text;
//   * a blank line becomes the text "\n" (execd >= 1.0.17) or is dropped (<= 1.0.16);
//   * a trailing partial line is held until a terminator arrives or the process exits.

#include <cstddef>
#include <cstring>
#include <string>
#include <string_view>

namespace fake_opensandbox {

class LineFramer {
 public:
  explicit LineFramer(bool keep_blank_lines) : keep_blank_lines_(keep_blank_lines) {}

  // Calls emit(std::string_view line) for every line completed by `data`.
  template <class Emit>
  void Feed(const char* data, size_t size, Emit&& emit);

  // End of output: a held partial line is emitted as is.
  template <class Emit>
  void Finish(Emit&& emit);

 private:
  template <class Emit>
  void EndLine(std::string_view line, Emit& emit) {
    if (!line.empty()) {
      emit(line);
    } else if (keep_blank_lines_) {
      emit(std::string_view("\n", 1));
    }
  }

  const bool keep_blank_lines_;
  std::string pending_;       // bytes of a line whose terminator has not arrived yet
  bool after_cr_ = false;     // the last byte seen was '\r' (a following '\n' is its pair)
};

template <class Emit>
void LineFramer::Feed(const char* data, size_t size, Emit&& emit) {
  size_t i = 0;
  if (after_cr_ && size > 0) {
    after_cr_ = false;
    if (data[0] == '\n') i = 1;
  }
  // memchr is vectorised; '\r' is rare, so its next position is looked up only when
  // the scan has passed it.
  const char* end = data + size;
  const char* next_cr = static_cast<const char*>(memchr(data + i, '\r', size - i));
  size_t line_start = i;
  while (i < size) {
    const char* nl = static_cast<const char*>(memchr(data + i, '\n', size - i));
    const char* stop = nl ? nl : end;
    if (next_cr && next_cr < stop) stop = next_cr;
    if (stop == end) break;
    i = static_cast<size_t>(stop - data);
    if (pending_.empty()) {
      EndLine(std::string_view(data + line_start, i - line_start), emit);
    } else {
      pending_.append(data + line_start, i - line_start);
      EndLine(pending_, emit);
      pending_.clear();
    }
    if (data[i] == '\r') {
      if (i + 1 < size) {
        if (data[i + 1] == '\n') ++i;
      } else {
        after_cr_ = true;
      }
      next_cr = i + 1 < size ? static_cast<const char*>(memchr(data + i + 1, '\r', size - i - 1))
                             : nullptr;
    }
    ++i;
    line_start = i;
  }
  if (line_start < size) pending_.append(data + line_start, size - line_start);
}

template <class Emit>
void LineFramer::Finish(Emit&& emit) {
  if (!pending_.empty()) emit(std::string_view(pending_));
  pending_.clear();
  after_cr_ = false;
}

}  // namespace fake_opensandbox
