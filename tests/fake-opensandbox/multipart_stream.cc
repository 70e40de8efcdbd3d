#include "tests/fake-opensandbox/multipart_stream.h"

#include <cctype>
#include <cstring>
#include <string_view>
#include <utility>

namespace fake_opensandbox {
namespace {

bool IsBlank(char c) { return c == ' ' || c == '\t'; }

std::string_view Trim(std::string_view s) {
  while (!s.empty() && IsBlank(s.front())) s.remove_prefix(1);
  while (!s.empty() && IsBlank(s.back())) s.remove_suffix(1);
  return s;
}

std::string Lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

// One parameter value of a header at `*pos`: a quoted-string (backslash escapes, as Go's
// mime.ParseMediaType reads them) or a token.
std::string ReadParameterValue(std::string_view header, size_t* pos) {
  std::string value;
  size_t i = *pos;
  if (i < header.size() && header[i] == '"') {
    for (++i; i < header.size() && header[i] != '"'; ++i) {
      if (header[i] == '\\' && i + 1 < header.size()) ++i;
      value += header[i];
    }
    if (i < header.size()) ++i;
  } else {
    while (i < header.size() && header[i] != ';') value += header[i++];
    value = std::string(Trim(value));
  }
  *pos = i;
  return value;
}

void ParseDisposition(std::string_view value, MultipartPartHeader* header) {
  size_t pos = value.find(';');
  while (pos != std::string_view::npos && pos < value.size()) {
    ++pos;
    while (pos < value.size() && IsBlank(value[pos])) ++pos;
    const size_t equals = value.find('=', pos);
    if (equals == std::string_view::npos) return;
    const std::string key = Lower(Trim(value.substr(pos, equals - pos)));
    pos = equals + 1;
    while (pos < value.size() && IsBlank(value[pos])) ++pos;
    std::string parameter = ReadParameterValue(value, &pos);
    if (key == "name") header->name = std::move(parameter);
    if (key == "filename") header->filename = std::move(parameter);
    pos = value.find(';', pos);
  }
}

}  // namespace

std::string MultipartBoundary(std::string_view content_type) {
  size_t pos = 0;
  while ((pos = content_type.find(';', pos)) != std::string_view::npos) {
    ++pos;
    while (pos < content_type.size() && IsBlank(content_type[pos])) ++pos;
    const size_t equals = content_type.find('=', pos);
    if (equals == std::string_view::npos) return "";
    const std::string key = Lower(Trim(content_type.substr(pos, equals - pos)));
    size_t value_pos = equals + 1;
    std::string value = ReadParameterValue(content_type, &value_pos);
    if (key == "boundary") return value;
    pos = value_pos;
  }
  return "";
}

MultipartStreamReader::MultipartStreamReader(std::string boundary, OnPart on_part, OnData on_data)
    : delimiter_("--" + boundary),
      inner_delimiter_("\r\n--" + boundary),
      on_part_(std::move(on_part)),
      on_data_(std::move(on_data)) {}

bool MultipartStreamReader::Fail(std::string error) {
  state_ = State::kFailed;
  error_ = std::move(error);
  return false;
}

bool MultipartStreamReader::Feed(const char* data, size_t size) {
  if (state_ == State::kFailed) return false;
  if (state_ == State::kEpilogue) return true;  // after the close: ignored, as Go does
  buffer_.append(data, size);
  for (;;) {
    bool progressed = false;
    switch (state_) {
      case State::kPreamble:
        progressed = StepPreamble();
        break;
      case State::kDelimiterLine:
        progressed = StepDelimiterLine();
        break;
      case State::kHeaders:
        progressed = StepHeaders();
        break;
      case State::kData:
        progressed = StepData();
        break;
      case State::kEpilogue:
        buffer_.clear();
        pos_ = scan_ = 0;
        return true;
      case State::kFailed:
        return false;
    }
    if (state_ == State::kFailed || stopped_) return false;
    if (!progressed) break;
  }
  // Keep only what is not consumed yet (at most a delimiter's worth, or a header block).
  buffer_.erase(0, pos_);
  scan_ -= std::min(scan_, pos_);
  pos_ = 0;
  return true;
}

bool MultipartStreamReader::Finish() {
  if (state_ == State::kEpilogue) return true;
  if (state_ != State::kFailed) Fail("the body ends before its closing delimiter");
  return false;
}

int MultipartStreamReader::DelimiterEndsAt(size_t at, size_t* after) {
  const std::string_view rest(buffer_.data() + at, buffer_.size() - at);
  if (rest.size() < 2) return -1;
  if (rest[0] == '-' && rest[1] == '-') {
    closing_ = true;
    *after = at + 2;
    return 1;
  }
  size_t i = 0;
  while (i < rest.size() && IsBlank(rest[i])) ++i;
  if (i + 2 > rest.size()) return i < rest.size() && rest[i] != '\r' ? 0 : -1;
  if (rest[i] != '\r' || rest[i + 1] != '\n') return 0;
  closing_ = false;
  *after = at + i + 2;
  return 1;
}

bool MultipartStreamReader::StepPreamble() {
  const std::string_view pending(buffer_.data() + pos_, buffer_.size() - pos_);
  if (at_body_start_) {
    if (pending.size() < delimiter_.size()) {
      if (delimiter_.compare(0, pending.size(), pending) == 0) return false;  // may still be
      at_body_start_ = false;
    } else if (pending.compare(0, delimiter_.size(), delimiter_) == 0) {
      pos_ += delimiter_.size();
      state_ = State::kDelimiterLine;
      return true;
    } else {
      at_body_start_ = false;
    }
  }
  const size_t found = pending.find(inner_delimiter_);
  if (found == std::string_view::npos) {
    // Keep the bytes that could begin a delimiter split across reads.
    if (pending.size() >= inner_delimiter_.size()) pos_ += pending.size() - inner_delimiter_.size() + 1;
    return false;
  }
  pos_ += found + inner_delimiter_.size();
  state_ = State::kDelimiterLine;
  return true;
}

bool MultipartStreamReader::StepDelimiterLine() {
  size_t after = 0;
  const int ends = DelimiterEndsAt(pos_, &after);
  if (ends < 0) return false;
  if (ends == 0) return Fail("malformed delimiter line");
  pos_ = after;
  state_ = closing_ ? State::kEpilogue : State::kHeaders;
  return true;
}

bool MultipartStreamReader::StepHeaders() {
  const std::string_view pending(buffer_.data() + pos_, buffer_.size() - pos_);
  if (pending.size() < 2) return false;
  // The empty line ends the headers; it may come first (a part without headers).
  const size_t end = pending.compare(0, 2, "\r\n") == 0 ? 0 : pending.find("\r\n\r\n");
  if (end == std::string_view::npos) {
    if (pending.size() > kMaxHeaderBytes) return Fail("part headers are too large");
    return false;
  }
  // Headers are the lines before the empty line (none at all when it comes first).
  const std::string_view block = end == 0 ? std::string_view() : pending.substr(0, end + 2);
  MultipartPartHeader header;
  size_t line_start = 0;
  while (line_start < block.size()) {
    const size_t line_end = block.find("\r\n", line_start);
    const std::string_view line = block.substr(line_start, line_end - line_start);
    line_start = line_end + 2;
    const size_t colon = line.find(':');
    if (colon == std::string_view::npos || colon == 0) return Fail("malformed part header line");
    const std::string name = Lower(Trim(line.substr(0, colon)));
    const std::string_view value = Trim(line.substr(colon + 1));
    if (name == "content-disposition") ParseDisposition(value, &header);
    if (name == "content-type") header.content_type = std::string(value);
  }
  pos_ += end == 0 ? 2 : end + 4;
  scan_ = pos_;
  state_ = State::kData;
  if (!on_part_(header)) stopped_ = true;
  return true;
}

bool MultipartStreamReader::StepData() {
  const char* base = buffer_.data();
  for (;;) {
    const void* cr = std::memchr(base + scan_, '\r', buffer_.size() - scan_);
    if (cr == nullptr) {
      scan_ = buffer_.size();
      break;
    }
    const size_t at = static_cast<size_t>(static_cast<const char*>(cr) - base);
    if (buffer_.size() - at < inner_delimiter_.size()) {
      // Maybe a delimiter cut by the read: hand over what is before it and wait.
      scan_ = at;
      break;
    }
    if (std::memcmp(base + at, inner_delimiter_.data(), inner_delimiter_.size()) != 0) {
      scan_ = at + 1;
      continue;
    }
    size_t after = 0;
    const int ends = DelimiterEndsAt(at + inner_delimiter_.size(), &after);
    if (ends < 0) {
      scan_ = at;
      break;
    }
    if (ends == 0) {
      scan_ = at + 1;
      continue;
    }
    if (at > pos_ && !on_data_(base + pos_, at - pos_)) stopped_ = true;
    pos_ = after;
    state_ = closing_ ? State::kEpilogue : State::kHeaders;
    return !stopped_;
  }
  // Everything before the first byte that may start a delimiter is data.
  if (scan_ > pos_) {
    if (!on_data_(base + pos_, scan_ - pos_)) stopped_ = true;
    pos_ = scan_;
  }
  return false;
}

}  // namespace fake_opensandbox
