#include "common/utf8_check.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <string>

namespace abx {
namespace {

// Unicode Table 3-7, one code point at a time: the offset of the first ill-formed byte.
size_t ReferenceFirstInvalid(const std::string& s) {
  size_t i = 0;
  while (i < s.size()) {
    const unsigned char c = static_cast<unsigned char>(s[i]);
    size_t n = 0;
    unsigned char lo = 0x80, hi = 0xBF;
    if (c < 0x80) {
      ++i;
      continue;
    } else if (c >= 0xC2 && c <= 0xDF) {
      n = 1;
    } else if (c == 0xE0) {
      n = 2, lo = 0xA0;
    } else if ((c >= 0xE1 && c <= 0xEC) || c == 0xEE || c == 0xEF) {
      n = 2;
    } else if (c == 0xED) {
      n = 2, hi = 0x9F;
    } else if (c == 0xF0) {
      n = 3, lo = 0x90;
    } else if (c >= 0xF1 && c <= 0xF3) {
      n = 3;
    } else if (c == 0xF4) {
      n = 3, hi = 0x8F;
    } else {
      return i;
    }
    for (size_t k = 1; k <= n; ++k) {
      if (i + k >= s.size()) return i;
      const unsigned char cc = static_cast<unsigned char>(s[i + k]);
      const unsigned char min = k == 1 ? lo : 0x80, max = k == 1 ? hi : 0xBF;
      if (cc < min || cc > max) return i;
    }
    i += n + 1;
  }
  return s.size();
}

TEST(Utf8CheckTest, KnownCases) {
  EXPECT_TRUE(IsValidUtf8(""));
  EXPECT_TRUE(IsValidUtf8("plain ascii"));
  EXPECT_TRUE(IsValidUtf8("h\xC3\xA9 \xF0\x9F\x98\x80 \xE2\x82\xAC"));
  EXPECT_FALSE(IsValidUtf8("\xC3"));            // cut short
  EXPECT_FALSE(IsValidUtf8("\xC0\xAF"));        // overlong
  EXPECT_FALSE(IsValidUtf8("\xED\xA0\x80"));    // surrogate
  EXPECT_FALSE(IsValidUtf8("\xF4\x90\x80\x80"));  // above U+10FFFF
  EXPECT_FALSE(IsValidUtf8("\xFF"));
  EXPECT_EQ(FirstInvalidUtf8("abc\xFF"), 3u);
}

// The ASCII fast path takes 16 bytes at a time: a bad or multi-byte sequence at any
// offset around those blocks must be found exactly where the reference finds it.
TEST(Utf8CheckTest, EveryOffsetAroundTheWideBlocks) {
  const std::string samples[] = {"\xFF", "\xC3\xA9", "\xC3", "\xE2\x82\xAC", "\xED\xA0\x80",
                                 "\xF0\x9F\x98\x80", "\xF0\x9F\x98", "\x80"};
  for (const std::string& sample : samples) {
    for (size_t offset = 0; offset < 40; ++offset) {
      for (size_t after : {0u, 1u, 15u, 16u, 17u, 40u}) {
        const std::string text = std::string(offset, 'a') + sample + std::string(after, 'b');
        EXPECT_EQ(FirstInvalidUtf8(text), ReferenceFirstInvalid(text))
            << "sample of " << sample.size() << " bytes at " << offset << ", " << after << " after";
      }
    }
  }
}

TEST(Utf8CheckTest, RandomBytesMatchTheReference) {
  uint64_t x = 0x9E3779B97F4A7C15ULL;
  for (int round = 0; round < 20000; ++round) {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    std::string text(x % 64, 'a');
    uint64_t y = x;
    for (char& c : text) {
      y = y * 6364136223846793005ULL + 1442695040888963407ULL;
      // Mostly ASCII, some lead and continuation bytes.
      const unsigned r = static_cast<unsigned>(y >> 56);
      c = static_cast<char>(r < 200 ? 'a' + r % 26 : 0x80 + r % 0x78);
    }
    ASSERT_EQ(FirstInvalidUtf8(text), ReferenceFirstInvalid(text));
  }
}

}  // namespace
}  // namespace abx
