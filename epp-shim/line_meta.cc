#include "epp-shim/line_meta.h"

// A files.write line is megabytes of base64 that the shim reads only to find `method`
// and `id`. So the whole line is first checked for bytes no JSON text may hold, 16 bytes
// at a time (common/json_text.h, as the bridge does), and the parser then runs without
// its own byte-by-byte check, scanning string contents 16 bytes at a time with SSE2 (part
// of every x86-64). That scanning is switched on for this file only, so RapidJSON lives
// in a namespace of its own here (as in bridge/opensandbox/execd_events.cc): its templates
// must not be merged with the plain ones other files instantiate. Its SSE2 code misreads
// the control characters 0x1A-0x1F (common/json_text.h): the check above keeps them out
// of the parser, and string ids are written with AppendJsonQuoted, not its writer.
#if defined(__SSE4_2__)
#define RAPIDJSON_SSE42
#elif defined(__SSE2__)
#define RAPIDJSON_SSE2
#endif
#define RAPIDJSON_NAMESPACE abx_line_meta_rapidjson
#define RAPIDJSON_NAMESPACE_BEGIN namespace abx_line_meta_rapidjson {
#define RAPIDJSON_NAMESPACE_END }
#include "rapidjson/memorystream.h"
#include "rapidjson/reader.h"
#include "rapidjson/stringbuffer.h"
#include "rapidjson/writer.h"

#include <cstring>

#include "common/json_text.h"
#include "common/line_id.h"

namespace abx {
namespace rapidjson = ::abx_line_meta_rapidjson;
namespace {

// The SIMD scan reads aligned 16-byte blocks, so it may read up to 15 bytes past the
// terminating NUL of a NUL-terminated input: only where the buffer holds them.
constexpr size_t kScanSlack = 15;

using JsonWriter = rapidjson::Writer<rapidjson::StringBuffer>;

// Deeper than this, the shim stops looking (only the top level matters to it) instead
// of letting the parser's stack grow with the line.
constexpr int kMaxDepth = 4096;

// Tracks the nesting depth and records the top-level members the shim cares about.
class TopLevelHandler
    : public rapidjson::BaseReaderHandler<rapidjson::UTF8<>, TopLevelHandler> {
 public:
  // `stream` and `size` let a prefix parse tell a complete token from a cut one.
  TopLevelHandler(const rapidjson::MemoryStream* stream, size_t size, bool prefix)
      : stream_(stream), size_(size), prefix_(prefix) {}
  // A whole line: no token is cut.
  TopLevelHandler() : stream_(nullptr), size_(0), prefix_(false) {}

  bool Default() { return true; }

  bool StartObject() {
    if (depth_ == 0) root_is_object_ = true;
    if (depth_ == 1) Member(kComposite);
    if (depth_ == 1) composite_seen_ = true;
    return ++depth_ <= kMaxDepth;
  }
  bool EndObject(rapidjson::SizeType) {
    --depth_;
    return true;
  }
  bool StartArray() {
    if (depth_ == 1) Member(kComposite);
    if (depth_ == 1) composite_seen_ = true;
    return ++depth_ <= kMaxDepth;
  }
  bool EndArray(rapidjson::SizeType) {
    --depth_;
    return true;
  }
  bool Key(const char* text, rapidjson::SizeType length, bool) {
    if (depth_ == 1) key_.assign(text, length);
    return true;
  }

  bool Null() { return Scalar([](JsonWriter* w) { w->Null(); }); }
  bool Bool(bool value) {
    // A boolean id is no id for the bridge (it answers -32600 with id null): not tracked,
    // like a composite one.
    if (depth_ == 1 && key_ == "id") {
      Member(kComposite);
      return true;
    }
    return Scalar([&](JsonWriter* w) { w->Bool(value); });
  }
  bool Int(int value) { return Scalar([&](JsonWriter* w) { w->Int(value); }); }
  bool Uint(unsigned value) { return Scalar([&](JsonWriter* w) { w->Uint(value); }); }
  bool Int64(int64_t value) { return Scalar([&](JsonWriter* w) { w->Int64(value); }); }
  bool Uint64(uint64_t value) { return Scalar([&](JsonWriter* w) { w->Uint64(value); }); }
  bool Double(double value) { return Scalar([&](JsonWriter* w) { w->Double(value); }); }
  bool String(const char* text, rapidjson::SizeType length, bool) {
    if (depth_ == 1 && key_ == "method" && !has_method_) {
      method_.assign(text, length);
      has_method_ = true;
      return true;
    }
    return Scalar([&](JsonWriter* w) {
      std::string quoted;
      AppendJsonQuoted(&quoted, std::string_view(text, length));
      w->RawValue(quoted.data(), quoted.size(), rapidjson::kStringType);
    });
  }

  LineMeta Result() const {
    LineMeta meta;
    if (!root_is_object_) return meta;
    meta.has_result = has_result_;
    meta.has_error = has_error_;
    if (has_method_) {
      meta.method = method_;
      if (!id_seen_) {
        meta.kind = LineMeta::Kind::kNotification;
      } else if (!id_json_.empty()) {
        meta.kind = LineMeta::Kind::kRequest;
        meta.id_json = id_json_;
      }
      // A composite id (object or array) is not a valid request: kOther, which the
      // bridge answers with -32600 and id null.
    }
    return meta;
  }

 private:
  enum MemberKind { kScalar, kComposite };

  // A member of the root object whose value just ended (or began, for composites).
  void Member(MemberKind kind) {
    if (key_ == "result") has_result_ = true;
    if (key_ == "error") has_error_ = true;
    if (key_ == "id" && !id_seen_) {
      id_seen_ = true;
      if (kind == kComposite) id_json_.clear();
    }
  }

  template <typename WriteValue>
  bool Scalar(WriteValue write_value) {
    if (depth_ != 1) return true;
    if (key_ == "id" && !id_seen_) {
      // In a prefix, a number that ends exactly at the cut may have lost digits; and,
      // as the bridge does, only an id before any nested value is trusted.
      if (prefix_ && (stream_->Tell() >= size_ || composite_seen_)) return true;
      rapidjson::StringBuffer buffer;
      JsonWriter writer(buffer);
      write_value(&writer);
      id_json_.assign(buffer.GetString(), buffer.GetSize());
    }
    Member(kScalar);
    return true;
  }

  const rapidjson::MemoryStream* stream_;
  const size_t size_;
  const bool prefix_;
  int depth_ = 0;
  bool root_is_object_ = false;
  std::string key_;
  bool has_method_ = false;
  std::string method_;
  bool composite_seen_ = false;  // a member of the root held an object or array
  bool id_seen_ = false;
  std::string id_json_;
  bool has_result_ = false;
  bool has_error_ = false;
};

// Iterative, so 8 MiB of '[' cannot exhaust the stack (the bridge parses so too).
constexpr unsigned kWholeLineFlags = rapidjson::kParseIterativeFlag;
// A prefix may end inside a character: the parser's own check stops there.
constexpr unsigned kPrefixFlags =
    rapidjson::kParseIterativeFlag | rapidjson::kParseValidateEncodingFlag;

template <typename Stream>
LineMeta ParseWhole(Stream& stream, size_t size) {
  TopLevelHandler handler;
  rapidjson::Reader reader;
  rapidjson::ParseResult ok = reader.Parse<kWholeLineFlags>(stream, handler);
  // A NUL byte ends the input early; refuse lines that have one (not JSON anyway).
  if (!ok || stream.Tell() != size) return LineMeta();
  return handler.Result();
}

}  // namespace

LineMeta ParseLineMeta(const std::string& line) {
  // Such a byte anywhere makes a line not JSON, for the bridge as for the shim.
  if (FirstNonJsonByte(line) != line.size()) return LineMeta();
  if (line.capacity() >= line.size() + kScanSlack) {
    rapidjson::StringStream stream(line.c_str());  // the SIMD scan works on this one
    return ParseWhole(stream, line.size());
  }
  rapidjson::MemoryStream stream(line.data(), line.size());
  return ParseWhole(stream, line.size());
}

LineMeta ParseLinePrefixMeta(const std::string& prefix) {
  rapidjson::MemoryStream stream(prefix.data(), prefix.size());
  TopLevelHandler handler(&stream, prefix.size(), /*prefix=*/true);
  rapidjson::Reader reader;
  reader.Parse<kPrefixFlags>(stream, handler);
  LineMeta meta = handler.Result();
  // A cut line's answer (E8008) carries the id the bridge reads with the same reader,
  // method or not, so it is tracked like a request whenever there is one.
  std::string id_json;
  if (ReadCutLineId(prefix, &id_json)) {
    meta.kind = LineMeta::Kind::kRequest;
    meta.id_json = std::move(id_json);
  } else if (meta.kind == LineMeta::Kind::kRequest) {
    meta.kind = LineMeta::Kind::kOther;
    meta.id_json.clear();
  }
  return meta;
}

std::string CanonicalIdJson(const std::string& json) {
  LineMeta meta = ParseLineMeta("{\"method\":\"\",\"id\":" + json + "}");
  return meta.kind == LineMeta::Kind::kRequest ? meta.id_json : "";
}

std::string BridgeUnreachableResponse(const std::string& id_json, const std::string& message) {
  std::string line = "{\"jsonrpc\":\"2.0\",\"id\":";
  line += id_json.empty() ? "null" : id_json;
  line += ",\"error\":{\"code\":-32001,\"message\":";
  AppendJsonQuoted(&line, message);
  line += ",\"data\":{\"epp_code\":\"E8002\",\"retryable\":true}}}";
  return line;
}

}  // namespace abx
