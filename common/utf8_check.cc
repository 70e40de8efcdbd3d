#include "common/utf8_check.h"

#include <cstdint>
#include <cstring>

namespace abx {
namespace {

constexpr uint64_t kHighBits = 0x8080808080808080ULL;

// Length of the well-formed sequence at s[i], or 0 (Unicode Table 3-7).
size_t SequenceLength(const unsigned char* s, size_t size, size_t i) {
  const unsigned char c = s[i];
  if (c < 0x80) return 1;
  size_t n;
  unsigned min;
  if ((c & 0xE0) == 0xC0) {
    n = 2, min = 0x80;
  } else if ((c & 0xF0) == 0xE0) {
    n = 3, min = 0x800;
  } else if ((c & 0xF8) == 0xF0) {
    n = 4, min = 0x10000;
  } else {
    return 0;
  }
  if (i + n > size) return 0;
  unsigned cp = c & (0x7F >> n);
  for (size_t k = 1; k < n; ++k) {
    const unsigned char cc = s[i + k];
    if ((cc & 0xC0) != 0x80) return 0;
    cp = (cp << 6) | (cc & 0x3F);
  }
  if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return 0;
  return n;
}

}  // namespace

size_t FirstInvalidUtf8(std::string_view text) {
  const auto* s = reinterpret_cast<const unsigned char*>(text.data());
  const size_t size = text.size();
  size_t i = 0;
  while (i < size) {
    // Runs of ASCII, 16 bytes at a time (loads through memcpy: no alignment needed).
    while (i + 16 <= size) {
      uint64_t a, b;
      std::memcpy(&a, s + i, 8);
      std::memcpy(&b, s + i + 8, 8);
      if (((a | b) & kHighBits) != 0) break;
      i += 16;
    }
    while (i < size && s[i] < 0x80) {
      ++i;
      if ((i & 15) == 0) break;  // back to the wide loop
    }
    if (i >= size) break;
    if (s[i] < 0x80) continue;
    const size_t n = SequenceLength(s, size, i);
    if (n == 0) return i;
    i += n;
  }
  return size;
}

bool IsValidUtf8(std::string_view text) { return FirstInvalidUtf8(text) == text.size(); }

size_t Utf8SequenceLength(std::string_view text, size_t i) {
  return SequenceLength(reinterpret_cast<const unsigned char*>(text.data()), text.size(), i);
}

}  // namespace abx
