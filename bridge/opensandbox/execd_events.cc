#include "bridge/opensandbox/execd_events.h"

// Event lines are parsed in situ, where RapidJSON scans string contents (a stdout line's
// "text") 16 bytes at a time with SSE2, part of every x86-64, instead of copying them byte
// by byte. That scanning is switched on for this file only, so RapidJSON lives in a
// namespace of its own here: its templates and inline functions must not be merged with
// the plain ones that other files instantiate. Its SSE2 code misreads 0x1A-0x1F
// (common/json_text.h): lines are checked for such bytes first, and captured strings are
// written with AppendJsonQuoted.
#if defined(__SSE4_2__)
#define RAPIDJSON_SSE42
#elif defined(__SSE2__)
#define RAPIDJSON_SSE2
#endif
#define RAPIDJSON_NAMESPACE abx_sse_rapidjson
#define RAPIDJSON_NAMESPACE_BEGIN namespace abx_sse_rapidjson {
#define RAPIDJSON_NAMESPACE_END }
#include <rapidjson/reader.h>
#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

#include <cmath>
#include <cstring>
#include <utility>

#include "common/json_text.h"

namespace abx::opensandbox {
namespace rapidjson = ::abx_sse_rapidjson;
namespace {

// NUL bytes after a line copied for in-situ parsing: the end of the input for RapidJSON,
// and room for its aligned 16-byte loads, which may read past the terminator.
constexpr size_t kScanPadding = 16;

// Buffers that held a huge event are given back instead of being kept for the next one.
constexpr size_t kKeepCapacityBytes = 1 << 20;

bool IsBlank(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\f' || c == '\v'; }

std::string_view Trim(std::string_view s) {
  while (!s.empty() && IsBlank(s.front())) s.remove_prefix(1);
  while (!s.empty() && IsBlank(s.back())) s.remove_suffix(1);
  return s;
}

bool StartsWith(std::string_view s, std::string_view prefix) {
  return s.size() >= prefix.size() && s.compare(0, prefix.size(), prefix) == 0;
}

void ReleaseIfHuge(std::string* s) {
  if (s->capacity() > kKeepCapacityBytes) {
    std::string().swap(*s);
  } else {
    s->clear();
  }
}

}  // namespace

// SAX handler that fills one ExecdEvent straight from the parser's string buffer: no DOM,
// one copy of `text`, and the same event object (and its string capacity) reused for every
// line, so the many small events of a fast stream cost no allocation.
class ExecdEventParser::JsonHandler
    : public rapidjson::BaseReaderHandler<rapidjson::UTF8<>, ExecdEventParser::JsonHandler> {
 public:
  // Parses one line into event(). Returns nullptr on success, else why it is garbage.
  const char* Parse(const char* data, size_t size) {
    Reset();
    // Bytes no JSON may hold (invalid UTF-8, raw control characters) make the line
    // garbage before the parser sees it: this namespace's SSE2 scan would take 0x1A-0x1F
    // inside a string for text (common/json_text.h).
    if (abx::FirstNonJsonByte(std::string_view(data, size)) != size) return "not JSON";
    // A copy, NUL-terminated, parsed in situ: strings are unescaped where they lie and
    // handed over from there. The bytes the caller passed stay as they were.
    line_.assign(data, size);
    line_.append(kScanPadding, '\0');
    rapidjson::InsituStringStream stream(&line_[0]);
    // Iterative: a line of 64 MiB of '[' from whatever answers as execd must not
    // exhaust the stack of the bridge, which serves every session.
    rapidjson::ParseResult result =
        reader_.Parse<rapidjson::kParseIterativeFlag | rapidjson::kParseInsituFlag>(stream, *this);
    if (result.IsError()) {
      if (failure_ != nullptr) return failure_;
      if (result.Code() == rapidjson::kParseErrorDocumentRootNotSingular) {
        return "trailing bytes after the JSON object";
      }
      return "not JSON";
    }
    // A NUL byte ends the input, so a line with one inside would otherwise parse as its
    // prefix.
    if (stream.Tell() != size) return "not JSON";
    event_.kind = has_type_ ? ExecdEventKind::kTyped : ExecdEventKind::kUntyped;
    return nullptr;
  }

  const ExecdEvent& event() const { return event_; }

  // A string (or key) of the captured `results`, escaped by AppendJsonQuoted: this
  // namespace's SSE2 writer would leave 0x1A-0x1F raw (common/json_text.h).
  bool CaptureString(const char* str, rapidjson::SizeType length) {
    quoted_.clear();
    abx::AppendJsonQuoted(&quoted_, std::string_view(str, length));
    return results_writer_.RawValue(quoted_.data(), quoted_.size(), rapidjson::kStringType);
  }

  // --- rapidjson SAX interface ---
  bool Null() {
    if (capturing_) return results_writer_.Null();
    // omitempty means an absent field, and an explicit null reads the same way.
    return depth_ == 0 ? Fail("not a JSON object") : true;
  }
  bool Bool(bool b) {
    if (capturing_) return results_writer_.Bool(b);
    return NotString();
  }
  bool Int(int i) {
    if (capturing_) return results_writer_.Int(i);
    return Number(i);
  }
  bool Uint(unsigned u) {
    if (capturing_) return results_writer_.Uint(u);
    return Number(u);
  }
  bool Int64(int64_t i) {
    if (capturing_) return results_writer_.Int64(i);
    return Number(i);
  }
  bool Uint64(uint64_t u) {
    if (capturing_) return results_writer_.Uint64(u);
    return Number(u > static_cast<uint64_t>(INT64_MAX) ? INT64_MAX : static_cast<int64_t>(u));
  }
  bool Double(double d) {
    if (capturing_) return results_writer_.Double(d);
    if (!std::isfinite(d) || std::fabs(d) > 9.2e18) return NotString();
    return Number(std::llround(d));
  }
  bool String(const char* str, rapidjson::SizeType length, bool /*copy*/) {
    if (capturing_) return CaptureString(str, length);
    if (depth_ == 0) return Fail("not a JSON object");
    if (depth_ == 1) {
      switch (field_) {
        case Field::kType:
          event_.type.assign(str, length);
          has_type_ = true;
          break;
        case Field::kText:
          event_.text.assign(str, length);
          break;
        case Field::kCode:
          event_.code.assign(str, length);
          break;
        case Field::kMessage:
        case Field::kError:  // {"error":"..."} from /metrics/watch
          event_.message.assign(str, length);
          break;
        default:
          break;
      }
      return true;
    }
    if (in_error_ && depth_ == 2) {
      if (error_field_ == ErrorField::kEname) event_.error->ename.assign(str, length);
      if (error_field_ == ErrorField::kEvalue) event_.error->evalue.assign(str, length);
      return true;
    }
    if (in_traceback_ && depth_ == 3) event_.error->traceback.emplace_back(str, length);
    return true;
  }
  bool Key(const char* str, rapidjson::SizeType length, bool /*copy*/) {
    if (capturing_) return CaptureString(str, length);
    std::string_view key(str, length);
    if (depth_ == 1) {
      field_ = RootField(key);
    } else if (in_error_ && depth_ == 2) {
      error_field_ = key == "ename"       ? ErrorField::kEname
                     : key == "evalue"    ? ErrorField::kEvalue
                     : key == "traceback" ? ErrorField::kTraceback
                                          : ErrorField::kOther;
    }
    return true;
  }
  bool StartObject() {
    if (capturing_) {
      ++capture_depth_;
      return results_writer_.StartObject();
    }
    if (depth_ == 1 && field_ == Field::kResults) {
      // A second "results" in one event replaces the first, as Go's decoder does.
      results_buffer_.Clear();
      results_writer_.Reset(results_buffer_);
      capturing_ = true;
      capture_depth_ = 1;
      return results_writer_.StartObject();
    }
    if (depth_ == 1 && field_ == Field::kType) return Fail("\"type\" is not a string");
    if (depth_ == 1 && field_ == Field::kError) {
      in_error_ = true;
      error_field_ = ErrorField::kNone;
      event_.error.emplace();
    }
    ++depth_;
    return true;
  }
  bool EndObject(rapidjson::SizeType count) {
    if (capturing_) {
      bool ok = results_writer_.EndObject(count);
      if (--capture_depth_ == 0) {
        capturing_ = false;
        event_.results_json.assign(results_buffer_.GetString(), results_buffer_.GetSize());
      }
      return ok;
    }
    --depth_;
    if (depth_ == 1) in_error_ = false;
    return true;
  }
  bool StartArray() {
    if (capturing_) {
      ++capture_depth_;
      return results_writer_.StartArray();
    }
    if (depth_ == 0) return Fail("not a JSON object");
    if (depth_ == 1 && field_ == Field::kType) return Fail("\"type\" is not a string");
    if (in_error_ && depth_ == 2 && error_field_ == ErrorField::kTraceback) in_traceback_ = true;
    ++depth_;
    return true;
  }
  bool EndArray(rapidjson::SizeType count) {
    if (capturing_) {
      --capture_depth_;
      return results_writer_.EndArray(count);
    }
    --depth_;
    if (depth_ == 2) in_traceback_ = false;
    return true;
  }

 private:
  enum class Field {
    kNone, kType, kText, kExecutionTime, kExecutionCount, kTimestamp,
    kError, kResults, kCode, kMessage, kOther,
  };
  enum class ErrorField { kNone, kEname, kEvalue, kTraceback, kOther };

  static Field RootField(std::string_view key) {
    if (key == "type") return Field::kType;
    if (key == "text") return Field::kText;
    if (key == "execution_time") return Field::kExecutionTime;
    if (key == "execution_count") return Field::kExecutionCount;
    if (key == "timestamp") return Field::kTimestamp;
    if (key == "error") return Field::kError;
    if (key == "results") return Field::kResults;
    if (key == "code") return Field::kCode;
    if (key == "message") return Field::kMessage;
    return Field::kOther;
  }

  void Reset() {
    ReleaseIfHuge(&line_);
    event_.kind = ExecdEventKind::kTyped;
    ReleaseIfHuge(&event_.type);
    ReleaseIfHuge(&event_.text);
    event_.execution_time_ms.reset();
    event_.execution_count.reset();
    event_.timestamp_ms = 0;
    event_.error.reset();
    event_.code.clear();
    ReleaseIfHuge(&event_.message);
    ReleaseIfHuge(&event_.results_json);
    has_type_ = false;
    depth_ = 0;
    field_ = Field::kNone;
    in_error_ = false;
    in_traceback_ = false;
    error_field_ = ErrorField::kNone;
    capturing_ = false;
    capture_depth_ = 0;
    results_buffer_.Clear();
    results_writer_.Reset(results_buffer_);
    failure_ = nullptr;
  }

  bool Fail(const char* reason) {
    failure_ = reason;
    return false;
  }

  // A value that is not a string where it may matter whether it is one.
  bool NotString() {
    if (depth_ == 0) return Fail("not a JSON object");
    if (depth_ == 1 && field_ == Field::kType) return Fail("\"type\" is not a string");
    return true;
  }

  bool Number(int64_t value) {
    if (depth_ == 0) return Fail("not a JSON object");
    if (depth_ == 1) {
      switch (field_) {
        case Field::kType:
          return Fail("\"type\" is not a string");
        case Field::kExecutionTime:
          event_.execution_time_ms = value;
          break;
        case Field::kExecutionCount:
          event_.execution_count = value;
          break;
        case Field::kTimestamp:
          event_.timestamp_ms = value;
          break;
        default:
          break;
      }
      return true;
    }
    // A numeric evalue is not what execd sends, but its meaning is clear.
    if (in_error_ && depth_ == 2 && error_field_ == ErrorField::kEvalue) {
      event_.error->evalue = std::to_string(value);
    }
    return true;
  }

  rapidjson::Reader reader_;
  std::string line_;  // the line being parsed, in situ
  ExecdEvent event_;
  bool has_type_ = false;
  int depth_ = 0;  // containers open; 1 = inside the root object
  Field field_ = Field::kNone;
  bool in_error_ = false;
  bool in_traceback_ = false;
  ErrorField error_field_ = ErrorField::kNone;
  bool capturing_ = false;  // inside "results", copied verbatim
  int capture_depth_ = 0;
  rapidjson::StringBuffer results_buffer_;
  rapidjson::Writer<rapidjson::StringBuffer> results_writer_{results_buffer_};
  std::string quoted_;  // CaptureString's scratch
  const char* failure_ = nullptr;
};

const std::string& ExecdEvent::error_value() const {
  static const std::string kNone;
  return error ? error->evalue : kNone;
}

const std::vector<std::string>& ExecdEvent::traceback() const {
  static const std::vector<std::string> kNone;
  return error ? error->traceback : kNone;
}

ExecdEventParser::ExecdEventParser(EventCallback on_event, GarbageCallback on_garbage, size_t max_line_bytes)
    : on_event_(std::move(on_event)),
      on_garbage_(std::move(on_garbage)),
      max_line_bytes_(max_line_bytes),
      handler_(std::make_unique<JsonHandler>()) {}

ExecdEventParser::~ExecdEventParser() = default;

bool ExecdEventParser::Feed(const char* data, size_t size) {
  while (size > 0 && !stopped_) {
    const char* newline = static_cast<const char*>(std::memchr(data, '\n', size));
    size_t length = newline ? static_cast<size_t>(newline - data) : size;
    if (skipping_long_line_) {
      if (newline) skipping_long_line_ = false;
    } else if (pending_.size() + length > max_line_bytes_) {
      std::string excerpt = pending_.substr(0, kGarbageExcerptBytes);
      excerpt.append(data, std::min(length, kGarbageExcerptBytes - excerpt.size()));
      ReleaseIfHuge(&pending_);
      pending_.clear();
      skipping_long_line_ = newline == nullptr;
      ReportGarbage(Trim(excerpt), "line longer than the limit");
    } else if (!newline) {
      pending_.append(data, length);
    } else if (pending_.empty()) {
      HandleLine(data, length);
    } else {
      pending_.append(data, length);
      HandleLine(pending_.data(), pending_.size());
      ReleaseIfHuge(&pending_);
    }
    if (!newline) break;
    data = newline + 1;
    size -= length + 1;
  }
  return !stopped_;
}

bool ExecdEventParser::Finish() {
  if (stopped_) return false;
  skipping_long_line_ = false;
  if (!pending_.empty()) {
    HandleLine(pending_.data(), pending_.size());
    ReleaseIfHuge(&pending_);
  }
  return !stopped_;
}

bool ExecdEventParser::HandleLine(const char* data, size_t size) {
  std::string_view line = Trim(std::string_view(data, size));
  if (line.empty()) return true;
  if (line.front() == ':' || StartsWith(line, "event:") || StartsWith(line, "id:") ||
      StartsWith(line, "retry:")) {
    ++ignored_lines_;
    return true;
  }
  if (StartsWith(line, "data:")) {
    line = Trim(line.substr(5));
    if (line.empty()) {
      ++ignored_lines_;
      return true;
    }
  }
  if (const char* reason = handler_->Parse(line.data(), line.size())) {
    return ReportGarbage(line, reason);
  }
  ++events_;
  if (!on_event_(handler_->event())) stopped_ = true;
  return !stopped_;
}

bool ExecdEventParser::ReportGarbage(std::string_view line, std::string_view reason) {
  ++garbage_lines_;
  if (on_garbage_ && !on_garbage_(line.substr(0, kGarbageExcerptBytes), reason)) stopped_ = true;
  return !stopped_;
}

}  // namespace abx::opensandbox
