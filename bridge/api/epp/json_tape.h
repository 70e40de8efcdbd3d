#pragma once
// One JSON text parsed in place into a flat list of tokens, 16 bytes at a time where the
// CPU allows. jsonrpc.cc replays the tokens into a rapidjson::Document whose strings
// point into the text, so a line of megabytes (files.write data) is scanned at memory
// speed and never copied. The fast scan lives in its own file because RapidJSON's SSE2
// code must stay in a namespace of its own (see json_tape.cc).

#include <cstddef>
#include <cstdint>
#include <vector>

namespace abx::epp {

struct JsonToken {
  enum class Kind : uint8_t {
    kNull, kFalse, kTrue, kInt, kUint, kInt64, kUint64, kDouble,
    kString, kKey, kStartObject, kEndObject, kStartArray, kEndArray,
  };
  Kind kind;
  uint32_t size;  // kString, kKey: length; kEndObject, kEndArray: member or element count
  union {
    const char* text;  // kString, kKey: in the parsed text, unescaped, NUL-terminated
    int64_t i;
    uint64_t u;
    double d;
  };
};

struct JsonTapeError {
  int code = 0;       // a rapidjson::ParseErrorCode; 0 when the text parsed
  size_t offset = 0;  // where the parser stopped
};

// Parses the NUL-terminated `text` (in place: strings are unescaped where they lie) into
// `tokens`, iteratively (no recursion, whatever the nesting). The text must not hold a
// NUL of its own nor any byte that common/json_text.h's FirstNonJsonByte reports.
JsonTapeError TokenizeInPlace(char* text, std::vector<JsonToken>* tokens);

}  // namespace abx::epp
