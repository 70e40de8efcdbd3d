#include "epp-shim/proto_wire.h"

namespace abx::wire {
namespace {

// Nested groups deeper than this are refused rather than followed (the generated
// parser's default recursion limit is 100).
constexpr int kMaxGroupDepth = 100;
constexpr uint32_t kMaxFieldNumber = (1u << 29) - 1;

}  // namespace

void AppendVarint(std::string* out, uint64_t value) {
  char bytes[10];
  size_t size = 0;
  while (value >= 0x80) {
    bytes[size++] = static_cast<char>((value & 0x7f) | 0x80);
    value >>= 7;
  }
  bytes[size++] = static_cast<char>(value);
  out->append(bytes, size);
}

void AppendTag(std::string* out, uint32_t field, WireType type) {
  AppendVarint(out, (static_cast<uint64_t>(field) << 3) | type);
}

void AppendInt64Field(std::string* out, uint32_t field, int64_t value) {
  AppendTag(out, field, kVarint);
  AppendVarint(out, static_cast<uint64_t>(value));
}

void AppendBytesField(std::string* out, uint32_t field, std::string_view value) {
  AppendTag(out, field, kLengthDelimited);
  AppendVarint(out, value.size());
  out->append(value.data(), value.size());
}

bool Reader::ReadVarint(uint64_t* value) {
  uint64_t result = 0;
  for (int shift = 0; shift < 70; shift += 7) {
    if (at_ >= input_.size()) return false;
    const uint8_t byte = static_cast<uint8_t>(input_[at_++]);
    result |= static_cast<uint64_t>(byte & 0x7f) << shift;
    if ((byte & 0x80) == 0) {
      *value = result;
      return true;
    }
  }
  return false;  // more than 10 bytes
}

bool Reader::ReadTag(uint32_t* number, WireType* type) {
  uint64_t tag;
  if (!ReadVarint(&tag) || tag > 0xffffffffu) return false;
  *number = static_cast<uint32_t>(tag >> 3);
  const uint32_t wire_type = static_cast<uint32_t>(tag & 7);
  if (*number == 0 || *number > kMaxFieldNumber || wire_type > kFixed32) return false;
  *type = static_cast<WireType>(wire_type);
  return true;
}

bool Reader::SkipValue(uint32_t number, WireType type, int depth) {
  uint64_t value;
  switch (type) {
    case kVarint:
      return ReadVarint(&value);
    case kFixed64:
      if (input_.size() - at_ < 8) return false;
      at_ += 8;
      return true;
    case kFixed32:
      if (input_.size() - at_ < 4) return false;
      at_ += 4;
      return true;
    case kLengthDelimited:
      if (!ReadVarint(&value) || value > input_.size() - at_) return false;
      at_ += static_cast<size_t>(value);
      return true;
    case kStartGroup: {
      if (depth >= kMaxGroupDepth) return false;
      for (;;) {
        uint32_t inner_number;
        WireType inner_type;
        if (!ReadTag(&inner_number, &inner_type)) return false;
        if (inner_type == kEndGroup) return inner_number == number;
        if (!SkipValue(inner_number, inner_type, depth + 1)) return false;
      }
    }
    case kEndGroup:
      return false;  // an end without its start
  }
  return false;
}

bool Reader::Next(Field* field) {
  while (ok_ && at_ < input_.size()) {
    uint32_t number;
    WireType type;
    if (!ReadTag(&number, &type)) return Fail();
    field->number = number;
    field->type = type;
    switch (type) {
      case kVarint:
        if (!ReadVarint(&field->varint)) return Fail();
        return true;
      case kFixed64:
      case kFixed32: {
        const size_t width = type == kFixed64 ? 8 : 4;
        if (input_.size() - at_ < width) return Fail();
        uint64_t value = 0;
        for (size_t i = 0; i < width; ++i) {
          value |= static_cast<uint64_t>(static_cast<uint8_t>(input_[at_ + i])) << (8 * i);
        }
        at_ += width;
        field->varint = value;
        return true;
      }
      case kLengthDelimited: {
        uint64_t length;
        if (!ReadVarint(&length) || length > input_.size() - at_) return Fail();
        field->bytes = input_.substr(at_, static_cast<size_t>(length));
        at_ += static_cast<size_t>(length);
        return true;
      }
      case kStartGroup:
        // Unknown to every message here: skipped whole, as the generated parsers keep
        // it aside as an unknown field.
        if (!SkipValue(number, type, 0)) return Fail();
        continue;
      case kEndGroup:
        return Fail();
    }
  }
  return false;
}

}  // namespace abx::wire
