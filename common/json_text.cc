#include "common/json_text.h"

#include <algorithm>
#include <cstdint>
#include <cstring>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "common/utf8_check.h"

namespace abx {

size_t FirstNonJsonByte(std::string_view text) {
  const auto* s = reinterpret_cast<const unsigned char*>(text.data());
  const size_t size = text.size();
  size_t i = 0;
  while (i < size) {
#if defined(__SSE2__)
    // Blocks of printable ASCII (0x20-0x7F) pass 16 bytes at a time.
    while (i + 16 <= size) {
      const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(s + i));
      const __m128i control = _mm_cmpeq_epi8(_mm_max_epu8(v, _mm_set1_epi8(0x1F)), _mm_set1_epi8(0x1F));
      if (_mm_movemask_epi8(_mm_or_si128(v, control)) != 0) break;  // high bit or control
      i += 16;
    }
#endif
    if (i >= size) break;
    const unsigned char c = s[i];
    if (c >= 0x80) {
      // One multi-byte sequence (or a run of them) through the UTF-8 check.
      size_t end = i + 1;
      while (end < size && s[end] >= 0x80) ++end;
      const size_t bad = FirstInvalidUtf8(text.substr(i, end - i));
      if (bad != end - i) return i + bad;
      i = end;
      continue;
    }
    if (c < 0x20 && c != '\t' && c != '\n' && c != '\r') return i;
    ++i;
  }
  return size;
}

namespace {

// What JSON needs escaped, as RapidJSON's Writer escapes it (so the output is the same
// byte for byte): 0 = copied as is, 'u' = \u00XX, any other = a two-character escape.
constexpr char EscapeOf(unsigned char c) {
  return c == '\b'   ? 'b'
         : c == '\t' ? 't'
         : c == '\n' ? 'n'
         : c == '\f' ? 'f'
         : c == '\r' ? 'r'
         : c < 0x20   ? 'u'
         : c == '"'   ? '"'
         : c == '\\' ? '\\'
                      : 0;
}

// True when one of the 8 bytes of `word` may need escaping (a control character, '"'
// or '\\'); never false when one does. Lets the scan skip clean text 8 bytes at a time.
inline bool MayNeedEscape(uint64_t word) {
  constexpr uint64_t kOnes = 0x0101010101010101ULL;
  constexpr uint64_t kHigh = 0x8080808080808080ULL;
  auto has_zero = [](uint64_t v) { return ((v - kOnes) & ~v & kHigh) != 0; };
  const bool has_control = ((word - kOnes * 0x20) & ~word & kHigh) != 0;
  return has_control || has_zero(word ^ (kOnes * '"')) || has_zero(word ^ (kOnes * '\\'));
}

// Bytes from `p` to the first one in the next 16 that needs escaping, or 16 when none
// does: stream output is mostly long runs of clean text between newlines, which this
// skips 16 bytes per step (SSE2 is part of every x86-64).
#if defined(__SSE2__)
inline int CleanPrefix16(const char* p) {
  const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
  const __m128i control = _mm_cmpeq_epi8(_mm_max_epu8(v, _mm_set1_epi8(0x1F)), _mm_set1_epi8(0x1F));
  const __m128i quote = _mm_cmpeq_epi8(v, _mm_set1_epi8('"'));
  const __m128i backslash = _mm_cmpeq_epi8(v, _mm_set1_epi8('\\'));
  const int mask = _mm_movemask_epi8(_mm_or_si128(control, _mm_or_si128(quote, backslash)));
  return mask == 0 ? 16 : __builtin_ctz(static_cast<unsigned>(mask));
}
#endif

}  // namespace

void AppendJsonQuoted(std::string* out, std::string_view text) {
  static const char kHex[] = "0123456789ABCDEF";
  // Most text needs no escape: one allocation for that case, growth only for escapes.
  out->reserve(out->size() + text.size() + 2);
  out->push_back('"');
  const char* p = text.data();
  const char* const end = p + text.size();
  const char* run = p;  // start of the bytes not yet copied
  while (p < end) {
#if defined(__SSE2__)
    if (end - p >= 16) {
      const int clean = CleanPrefix16(p);
      p += clean;
      if (clean == 16) continue;
      // `p` needs an escape: the bytewise step below takes it.
    }
#endif
    if (end - p >= 8) {
      uint64_t word;
      std::memcpy(&word, p, 8);
      if (!MayNeedEscape(word)) {
        p += 8;
        continue;
      }
    }
    const char* const stop = std::min(p + 8, end);
    for (; p < stop; ++p) {
      const unsigned char c = static_cast<unsigned char>(*p);
      const char escape = EscapeOf(c);
      if (escape == 0) continue;
      out->append(run, p);
      if (escape == 'u') {
        const char seq[6] = {'\\', 'u', '0', '0', kHex[c >> 4], kHex[c & 15]};
        out->append(seq, 6);
      } else {
        const char seq[2] = {'\\', escape};
        out->append(seq, 2);
      }
      run = p + 1;
    }
  }
  out->append(run, end);
  out->push_back('"');
}


}  // namespace abx
