#include "common/line_reader.h"

#include <errno.h>
#include <poll.h>
#include <string.h>
#include <unistd.h>

#include <algorithm>
#include <utility>

namespace abx {

LineSplitter::LineSplitter(size_t max_line_bytes, size_t prefix_bytes)
    : max_line_bytes_(max_line_bytes), prefix_bytes_(std::min(prefix_bytes, max_line_bytes)) {}

void LineSplitter::Append(const char* data, size_t size) {
  current_length_ += size;
  if (!dropping_ && current_length_ > max_line_bytes_) {
    // Past the limit: from now on keep only the prefix, and give back the (up to
    // 8 MiB) buffer rather than holding it until the line ends.
    dropping_ = true;
    current_.resize(std::min(current_.size(), prefix_bytes_));
    current_.shrink_to_fit();
  }
  if (!dropping_) {
    if (current_.empty() && size > 0 && last_length_ > kReserveFromBytes) {
      // Large lines tend to come in runs (files.write chunks of the same size): sized
      // after the last one, this one is filled without growing and copying step by step.
      current_.reserve(std::min<uint64_t>(last_length_ + last_length_ / 8, max_line_bytes_));
    }
    current_.append(data, size);
  } else if (current_.size() < prefix_bytes_) {
    current_.append(data, std::min(size, prefix_bytes_ - current_.size()));
  }
}

void LineSplitter::Complete(std::vector<FramedLine>* out) {
  FramedLine line;
  line.oversized = dropping_;
  line.length = current_length_;
  line.data = std::move(current_);
  out->push_back(std::move(line));
  current_ = std::string();
  last_length_ = current_length_;
  current_length_ = 0;
  dropping_ = false;
}

void LineSplitter::Feed(const char* data, size_t size, std::vector<FramedLine>* out) {
  while (size > 0) {
    const char* newline = static_cast<const char*>(memchr(data, '\n', size));
    const size_t take = newline != nullptr ? static_cast<size_t>(newline - data) : size;
    Append(data, take);
    if (newline == nullptr) return;
    Complete(out);
    data += take + 1;
    size -= take + 1;
  }
}

void LineSplitter::Finish(std::vector<FramedLine>* out) {
  if (current_length_ > 0) Complete(out);
}

LineReader::LineReader(int fd, size_t max_line_bytes, size_t prefix_bytes, size_t read_size)
    : fd_(fd), splitter_(max_line_bytes, prefix_bytes), buffer_(read_size) {}

bool LineReader::Next(FramedLine* line) {
  while (next_ready_ == ready_.size()) {
    ready_.clear();
    next_ready_ = 0;
    if (at_end_) return false;
    ssize_t got = read(fd_, buffer_.data(), buffer_.size());
    if (got > 0) {
      splitter_.Feed(buffer_.data(), static_cast<size_t>(got), &ready_);
      continue;
    }
    if (got < 0 && errno == EINTR) continue;
    if (got < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      // A non-blocking descriptor handed to us: wait for it instead of spinning.
      pollfd entry{fd_, POLLIN, 0};
      poll(&entry, 1, -1);
      continue;
    }
    if (got < 0) error_ = std::string("read: ") + strerror(errno);
    at_end_ = true;
    splitter_.Finish(&ready_);
  }
  *line = std::move(ready_[next_ready_++]);
  return true;
}

}  // namespace abx
