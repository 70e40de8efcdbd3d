#include "bridge/api/epp/json_tape.h"

// RapidJSON scans strings and whitespace 16 bytes at a time with SSE2 (part of every
// x86-64) here, in a namespace of its own: its templates must not be merged with the plain
// ones of other files. Two properties of that code and why they are safe here:
//  * It reads whole aligned 16-byte blocks, so up to 15 bytes past the terminating NUL,
//    never across a page (as glibc's own string functions do). AddressSanitizer checks
//    every byte against the allocation, so sanitized builds use the plain scan.
//  * It takes the control characters 0x1A-0x1F for text; callers check the line for
//    them first (common/json_text.h).
#if defined(__has_feature)
#if __has_feature(address_sanitizer)
#define ABX_JSON_TAPE_PLAIN_SCAN 1
#endif
#endif
#if defined(__SANITIZE_ADDRESS__)
#define ABX_JSON_TAPE_PLAIN_SCAN 1
#endif
#if !defined(ABX_JSON_TAPE_PLAIN_SCAN)
#if defined(__SSE4_2__)
#define RAPIDJSON_SSE42
#elif defined(__SSE2__)
#define RAPIDJSON_SSE2
#endif
#endif
#define RAPIDJSON_NAMESPACE abx_tape_rapidjson
#define RAPIDJSON_NAMESPACE_BEGIN namespace abx_tape_rapidjson {
#define RAPIDJSON_NAMESPACE_END }
#include <rapidjson/reader.h>

namespace abx::epp {
namespace rapidjson = ::abx_tape_rapidjson;
namespace {

class TapeWriter : public rapidjson::BaseReaderHandler<rapidjson::UTF8<>, TapeWriter> {
 public:
  explicit TapeWriter(std::vector<JsonToken>* tokens) : tokens_(tokens) {}

  bool Null() { return Add(JsonToken::Kind::kNull); }
  bool Bool(bool b) { return Add(b ? JsonToken::Kind::kTrue : JsonToken::Kind::kFalse); }
  bool Int(int i) { return AddInt(JsonToken::Kind::kInt, i); }
  bool Uint(unsigned u) { return AddUint(JsonToken::Kind::kUint, u); }
  bool Int64(int64_t i) { return AddInt(JsonToken::Kind::kInt64, i); }
  bool Uint64(uint64_t u) { return AddUint(JsonToken::Kind::kUint64, u); }
  bool Double(double d) {
    JsonToken& t = Push(JsonToken::Kind::kDouble, 0);
    t.d = d;
    return true;
  }
  bool String(const char* text, rapidjson::SizeType length, bool) {
    Push(JsonToken::Kind::kString, length).text = text;
    return true;
  }
  bool Key(const char* text, rapidjson::SizeType length, bool) {
    Push(JsonToken::Kind::kKey, length).text = text;
    return true;
  }
  bool StartObject() { return Add(JsonToken::Kind::kStartObject); }
  bool EndObject(rapidjson::SizeType count) { return Push(JsonToken::Kind::kEndObject, count), true; }
  bool StartArray() { return Add(JsonToken::Kind::kStartArray); }
  bool EndArray(rapidjson::SizeType count) { return Push(JsonToken::Kind::kEndArray, count), true; }

 private:
  JsonToken& Push(JsonToken::Kind kind, uint32_t size) {
    tokens_->push_back(JsonToken{kind, size, {nullptr}});
    return tokens_->back();
  }
  bool Add(JsonToken::Kind kind) {
    Push(kind, 0);
    return true;
  }
  bool AddInt(JsonToken::Kind kind, int64_t i) {
    Push(kind, 0).i = i;
    return true;
  }
  bool AddUint(JsonToken::Kind kind, uint64_t u) {
    Push(kind, 0).u = u;
    return true;
  }

  std::vector<JsonToken>* tokens_;
};

}  // namespace

JsonTapeError TokenizeInPlace(char* text, std::vector<JsonToken>* tokens) {
  tokens->clear();
  TapeWriter writer(tokens);
  rapidjson::InsituStringStream stream(text);
  rapidjson::Reader reader;
  const rapidjson::ParseResult result =
      reader.Parse<rapidjson::kParseIterativeFlag | rapidjson::kParseInsituFlag>(stream, writer);
  JsonTapeError error;
  if (result.IsError()) {
    error.code = static_cast<int>(result.Code());
    error.offset = result.Offset();
  }
  return error;
}

}  // namespace abx::epp
