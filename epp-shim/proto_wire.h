#pragma once

// The protobuf wire format, as much of it as the shim's few messages need: varints,
// length-delimited fields, and skipping whatever a newer bridge adds (unknown fields of
// every wire type, groups included). Encoding appends to a std::string; decoding reads a
// byte range without copying (fields are views into it).
//
// Why by hand: the generated classes pull in libprotobuf (about half of the shim's
// former text); six small messages need a few dozen lines of this instead.
// //tests/epp-shim:bridge_messages_test checks both directions against the generated classes.

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace abx::wire {

enum WireType : uint32_t {
  kVarint = 0,
  kFixed64 = 1,
  kLengthDelimited = 2,
  kStartGroup = 3,
  kEndGroup = 4,
  kFixed32 = 5,
};

void AppendVarint(std::string* out, uint64_t value);
void AppendTag(std::string* out, uint32_t field, WireType type);
// `value` is written as the 64-bit two's complement varint protobuf uses for negative
// int32/int64 (ten bytes), so the generated parsers read it back exactly.
void AppendInt64Field(std::string* out, uint32_t field, int64_t value);
void AppendBytesField(std::string* out, uint32_t field, std::string_view value);

// One field read from a message.
struct Field {
  uint32_t number = 0;
  WireType type = kVarint;
  uint64_t varint = 0;     // kVarint, kFixed64, kFixed32: the value
  std::string_view bytes;  // kLengthDelimited: the payload (a view into the input)
};

// Reads the fields of one message in order. Next() skips groups as unknown fields
// (their contents are not returned). After Next() returned false, ok() tells a clean end
// from malformed input (truncated, a bad tag, a varint over 10 bytes, unbalanced groups).
class Reader {
 public:
  explicit Reader(std::string_view input) : input_(input) {}

  bool Next(Field* field);
  bool ok() const { return ok_; }

 private:
  bool ReadVarint(uint64_t* value);
  bool ReadTag(uint32_t* number, WireType* type);
  bool SkipValue(uint32_t number, WireType type, int depth);
  bool Fail() {
    ok_ = false;
    return false;
  }

  std::string_view input_;
  size_t at_ = 0;
  bool ok_ = true;
};

}  // namespace abx::wire
