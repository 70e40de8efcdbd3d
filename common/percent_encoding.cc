#include "common/percent_encoding.h"

namespace abx {
namespace {

constexpr char kHexDigits[] = "0123456789ABCDEF";

bool IsUnreserved(unsigned char c) {
  return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' ||
         c == '_' || c == '.' || c == '~';
}

int HexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// Decodes `value` into `out`; false at the first malformed escape when `strict`.
bool Decode(std::string_view value, bool plus_is_space, bool strict, std::string* out) {
  out->reserve(value.size());
  for (size_t i = 0; i < value.size(); ++i) {
    const char c = value[i];
    if (c == '%') {
      const int high = i + 2 < value.size() ? HexValue(value[i + 1]) : -1;
      const int low = i + 2 < value.size() ? HexValue(value[i + 2]) : -1;
      if (high >= 0 && low >= 0) {
        *out += static_cast<char>(high * 16 + low);
        i += 2;
        continue;
      }
      if (strict) return false;
    }
    *out += c == '+' && plus_is_space ? ' ' : c;
  }
  return true;
}

}  // namespace

std::string PercentEncode(std::string_view value) {
  std::string out;
  out.reserve(value.size() + value.size() / 4);
  for (unsigned char c : value) {
    if (IsUnreserved(c)) {
      out += static_cast<char>(c);
    } else {
      out += '%';
      out += kHexDigits[c >> 4];
      out += kHexDigits[c & 15];
    }
  }
  return out;
}

std::optional<std::string> PercentDecode(std::string_view value, bool plus_is_space) {
  std::string out;
  if (!Decode(value, plus_is_space, /*strict=*/true, &out)) return std::nullopt;
  return out;
}

std::string PercentDecodeLenient(std::string_view value, bool plus_is_space) {
  std::string out;
  Decode(value, plus_is_space, /*strict=*/false, &out);
  return out;
}

}  // namespace abx
