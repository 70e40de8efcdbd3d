#include "common/json_text.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <string>

#include "common/utf8_check.h"

namespace abx {
namespace {

size_t Reference(const std::string& text) {
  const size_t bad_utf8 = FirstInvalidUtf8(text);
  for (size_t i = 0; i < text.size(); ++i) {
    const unsigned char c = static_cast<unsigned char>(text[i]);
    if (i == bad_utf8) return i;
    if (c < 0x20 && c != '\t' && c != '\n' && c != '\r') return i;
  }
  return text.size();
}

TEST(JsonTextTest, BytesNoJsonMayHold) {
  EXPECT_EQ(FirstNonJsonByte("{\"a\":\t\"b\"}\r\n"), 12u);
  EXPECT_EQ(FirstNonJsonByte(std::string("ab\0c", 4)), 2u);
  EXPECT_EQ(FirstNonJsonByte("ab\x1A"), 2u);
  EXPECT_EQ(FirstNonJsonByte("\xC3\xA9\xFF"), 2u);
  EXPECT_EQ(FirstNonJsonByte("\x7F"), 1u);  // DEL is allowed in JSON strings
}

// The fast path takes 16 bytes at a time: every byte value at every offset around the
// blocks must be judged as the reference judges it.
TEST(JsonTextTest, EveryByteAtEveryOffset) {
  for (int byte = 0; byte < 256; ++byte) {
    for (size_t offset = 0; offset < 40; ++offset) {
      std::string text = std::string(offset, 'q') + static_cast<char>(byte) + std::string(20, 'r');
      ASSERT_EQ(FirstNonJsonByte(text), Reference(text)) << byte << " at " << offset;
      text = std::string(offset, 'q') + "\xE2\x82\xAC" + static_cast<char>(byte) + "zz";
      ASSERT_EQ(FirstNonJsonByte(text), Reference(text)) << byte << " after a euro sign at " << offset;
    }
  }
}

TEST(JsonTextTest, RandomTextMatchesTheReference) {
  uint64_t x = 0xDEADBEEFCAFEF00DULL;
  for (int round = 0; round < 20000; ++round) {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    std::string text(x % 70, ' ');
    uint64_t y = x;
    for (char& c : text) {
      y = y * 6364136223846793005ULL + 1442695040888963407ULL;
      const unsigned r = static_cast<unsigned>(y >> 56);
      c = static_cast<char>(r < 230 ? 0x20 + r % 0x5F : r);
    }
    ASSERT_EQ(FirstNonJsonByte(text), Reference(text));
  }
}

}  // namespace
}  // namespace abx
