#include "tests/fake-opensandbox/go_json.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace fake_opensandbox {
namespace {

// 1 = the byte can be copied as is (printable ASCII other than " \ < > &).
struct PlainTable {
  bool plain[256];
  constexpr PlainTable() : plain() {
    for (int c = 0x20; c < 0x80; ++c) plain[c] = true;
    plain['"'] = plain['\\'] = plain['<'] = plain['>'] = plain['&'] = false;
  }
};
constexpr PlainTable kPlain;

// Decodes one UTF-8 sequence at `p` (n bytes available) the way Go's utf8.DecodeRune
// does; returns its length, or 0 for an invalid byte.
size_t DecodeRune(const unsigned char* p, size_t n, uint32_t* rune) {
  unsigned char c = p[0];
  if (c < 0xC2 || c > 0xF4) return 0;
  if (c < 0xE0) {
    if (n < 2 || (p[1] & 0xC0) != 0x80) return 0;
    *rune = ((c & 0x1F) << 6) | (p[1] & 0x3F);
    return 2;
  }
  if (c < 0xF0) {
    if (n < 3 || (p[1] & 0xC0) != 0x80 || (p[2] & 0xC0) != 0x80) return 0;
    if (c == 0xE0 && p[1] < 0xA0) return 0;  // overlong
    if (c == 0xED && p[1] > 0x9F) return 0;  // surrogate
    *rune = ((c & 0x0F) << 12) | ((p[1] & 0x3F) << 6) | (p[2] & 0x3F);
    return 3;
  }
  if (n < 4 || (p[1] & 0xC0) != 0x80 || (p[2] & 0xC0) != 0x80 || (p[3] & 0xC0) != 0x80) {
    return 0;
  }
  if (c == 0xF0 && p[1] < 0x90) return 0;  // overlong
  if (c == 0xF4 && p[1] > 0x8F) return 0;  // above U+10FFFF
  *rune = ((c & 0x07) << 18) | ((p[1] & 0x3F) << 12) | ((p[2] & 0x3F) << 6) | (p[3] & 0x3F);
  return 4;
}

void AppendUnicodeEscape(std::string* out, unsigned value) {
  static const char kHex[] = "0123456789abcdef";
  char buf[6] = {'\\', 'u', kHex[(value >> 12) & 0xF], kHex[(value >> 8) & 0xF],
                 kHex[(value >> 4) & 0xF], kHex[value & 0xF]};
  out->append(buf, 6);
}

}  // namespace

void AppendGoJsonString(std::string* out, std::string_view text) {
  const auto* p = reinterpret_cast<const unsigned char*>(text.data());
  const size_t n = text.size();
  out->reserve(out->size() + n + 2);
  out->push_back('"');
  size_t run_start = 0;
  size_t i = 0;
  while (i < n) {
    // Eight plain bytes at a time (no control byte, quote, backslash, <, >, &, or
    // non-ASCII) are the common case of command output.
    while (i + 8 <= n) {
      uint64_t w;
      memcpy(&w, p + i, 8);
      constexpr uint64_t kOnes = 0x0101010101010101ULL, kHigh = 0x8080808080808080ULL;
      auto has_byte = [&](unsigned char b) {
        uint64_t x = w ^ (kOnes * b);
        return (x - kOnes) & ~x & kHigh;
      };
      uint64_t special = (w - kOnes * 0x20) & ~w & kHigh;  // bytes < 0x20
      special |= w & kHigh;                                 // non-ASCII
      special |= has_byte('"') | has_byte('\\') | has_byte('<') | has_byte('>') | has_byte('&');
      if (special) break;
      i += 8;
    }
    if (i >= n) break;
    unsigned char c = p[i];
    if (kPlain.plain[c]) {
      ++i;
      continue;
    }
    if (c >= 0x80) {
      uint32_t rune = 0;
      size_t len = DecodeRune(p + i, n - i, &rune);
      if (len != 0 && rune != 0x2028 && rune != 0x2029) {
        i += len;  // valid UTF-8 is copied verbatim with the surrounding run
        continue;
      }
      out->append(text.data() + run_start, i - run_start);
      if (len == 0) {
        out->append("\\ufffd");
        i += 1;
      } else {
        AppendUnicodeEscape(out, rune);
        i += len;
      }
      run_start = i;
      continue;
    }
    out->append(text.data() + run_start, i - run_start);
    switch (c) {
      case '"': out->append("\\\""); break;
      case '\\': out->append("\\\\"); break;
      case '\n': out->append("\\n"); break;
      case '\r': out->append("\\r"); break;
      case '\t': out->append("\\t"); break;
      case '\b': out->append("\\b"); break;
      case '\f': out->append("\\f"); break;
      default: AppendUnicodeEscape(out, c); break;  // control bytes and < > &
    }
    ++i;
    run_start = i;
  }
  out->append(text.data() + run_start, n - run_start);
  out->push_back('"');
}

void GoJsonWriter::BeforeValue() {
  if (need_comma_) out_.push_back(',');
  need_comma_ = true;
}

GoJsonWriter& GoJsonWriter::StartObject() {
  BeforeValue();
  out_.push_back('{');
  need_comma_ = false;
  return *this;
}

GoJsonWriter& GoJsonWriter::EndObject() {
  out_.push_back('}');
  need_comma_ = true;
  return *this;
}

GoJsonWriter& GoJsonWriter::StartArray() {
  BeforeValue();
  out_.push_back('[');
  need_comma_ = false;
  return *this;
}

GoJsonWriter& GoJsonWriter::EndArray() {
  out_.push_back(']');
  need_comma_ = true;
  return *this;
}

GoJsonWriter& GoJsonWriter::Key(std::string_view key) {
  BeforeValue();
  AppendGoJsonString(&out_, key);
  out_.push_back(':');
  need_comma_ = false;
  return *this;
}

GoJsonWriter& GoJsonWriter::String(std::string_view value) {
  BeforeValue();
  AppendGoJsonString(&out_, value);
  return *this;
}

GoJsonWriter& GoJsonWriter::Int(int64_t value) {
  BeforeValue();
  out_ += std::to_string(value);
  return *this;
}

GoJsonWriter& GoJsonWriter::Uint(uint64_t value) {
  BeforeValue();
  out_ += std::to_string(value);
  return *this;
}

GoJsonWriter& GoJsonWriter::Double(double value) {
  BeforeValue();
  if (!std::isfinite(value)) value = 0;
  char buf[64];
  snprintf(buf, sizeof(buf), "%.17g", value);
  // Prefer the shortest form that reads back the same, as Go's strconv does.
  for (int precision = 1; precision <= 17; ++precision) {
    char shorter[64];
    snprintf(shorter, sizeof(shorter), "%.*g", precision, value);
    if (strtod(shorter, nullptr) == value) {
      snprintf(buf, sizeof(buf), "%s", shorter);
      break;
    }
  }
  out_ += buf;
  return *this;
}

GoJsonWriter& GoJsonWriter::Bool(bool value) {
  BeforeValue();
  out_ += value ? "true" : "false";
  return *this;
}

std::string GoErrorBody(std::string_view code, std::string_view message) {
  GoJsonWriter w;
  w.StartObject();
  if (!code.empty()) w.Key("code").String(code);
  if (!message.empty()) w.Key("message").String(message);
  w.EndObject();
  return w.Take();
}

}  // namespace fake_opensandbox
