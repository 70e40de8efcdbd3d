#include "bridge/base/base64.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <optional>
#include <string>

namespace abx {
namespace {

TEST(Base64Test, KnownVectors) {
  EXPECT_EQ(Base64Encode(""), "");
  EXPECT_EQ(Base64Encode("f"), "Zg==");
  EXPECT_EQ(Base64Encode("fo"), "Zm8=");
  EXPECT_EQ(Base64Encode("foo"), "Zm9v");
  EXPECT_EQ(Base64Encode("foobar"), "Zm9vYmFy");
}

TEST(Base64Test, EveryByteRoundTrips) {
  std::string all;
  for (int i = 0; i < 256; ++i) all += static_cast<char>(i);
  for (size_t n = 0; n <= all.size(); n += 7) {
    auto back = Base64Decode(Base64Encode(all.substr(0, n)));
    ASSERT_TRUE(back.has_value());
    EXPECT_EQ(*back, all.substr(0, n));
  }
}

TEST(Base64Test, RejectsBadInput) {
  EXPECT_FALSE(Base64Decode("Zm9").has_value());
  EXPECT_FALSE(Base64Decode("Zm9v!").has_value());
  EXPECT_FALSE(Base64Decode("Zg==Zg==").has_value());
  EXPECT_EQ(*Base64Decode("Zm9v\nYmFy"), "foobar");
}

// The decoder takes whole groups fast and hands over to a bytewise loop at the first
// byte that is not in the alphabet: the result must not depend on where that happens.
TEST(Base64Test, WhitespaceAndPaddingAnywhereAfterFastGroups) {
  EXPECT_EQ(*Base64Decode("Zm 9vYm Fy"), "foobar");
  EXPECT_EQ(*Base64Decode(" Zm9vYmFy\r\n"), "foobar");
  EXPECT_EQ(*Base64Decode("Zm9vYmFyZg=="), "foobarf");
  EXPECT_EQ(*Base64Decode("Zm9vYmFyZm8\n="), "foobarfo");
  EXPECT_FALSE(Base64Decode("Zm9vYmFyZg=").has_value());
  EXPECT_FALSE(Base64Decode("Zm9vYmFyZg==Zm9v").has_value());
  EXPECT_FALSE(Base64Decode("Zm9vYm\x80y").has_value());
  std::string big;
  for (int i = 0; i < 100000; ++i) big += static_cast<char>(i * 7919 % 256);
  EXPECT_EQ(*Base64Decode(Base64Encode(big)), big);
}

// The decoder takes blocks of 16 characters at a time where the CPU allows, then groups
// of four, then single bytes. Every character of the alphabet, and every byte outside it,
// at every position of a block, must give what the bytewise reference gives.
std::optional<std::string> ReferenceDecode(const std::string& text) {
  static const std::string kAlphabet =
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  uint32_t acc = 0;
  int bits = 0, pad = 0, count = 0;
  for (unsigned char c : text) {
    if (c == ' ' || c == '\n' || c == '\r' || c == '\t') continue;
    ++count;
    if (c == '=') {
      ++pad;
      continue;
    }
    if (pad) return std::nullopt;
    const size_t v = kAlphabet.find(static_cast<char>(c));
    if (v == std::string::npos) return std::nullopt;
    acc = (acc << 6) | static_cast<uint32_t>(v);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out += static_cast<char>((acc >> bits) & 0xFF);
    }
  }
  if (count % 4 != 0 || pad > 2) return std::nullopt;
  return out;
}

TEST(Base64Test, EveryByteAtEveryPositionOfABlock) {
  std::string clean;
  for (int i = 0; i < 48; ++i) {
    clean += "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"[(i * 37) % 64];
  }
  ASSERT_EQ(Base64Decode(clean), ReferenceDecode(clean));
  for (int byte = 0; byte < 256; ++byte) {
    for (size_t pos : {0u, 5u, 15u, 16u, 21u, 31u, 47u}) {
      std::string text = clean;
      text[pos] = static_cast<char>(byte);
      EXPECT_EQ(Base64Decode(text), ReferenceDecode(text)) << "byte " << byte << " at " << pos;
    }
  }
}

TEST(Base64Test, LongRandomTextsMatchTheReference) {
  uint64_t x = 88172645463325252ULL;
  auto next = [&] {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    return x;
  };
  for (int round = 0; round < 200; ++round) {
    std::string bytes(next() % 3000, '\0');
    for (char& c : bytes) c = static_cast<char>(next());
    std::string text = Base64Encode(bytes);
    EXPECT_EQ(*Base64Decode(text), bytes);
    if (!text.empty() && round % 2 == 0) {
      text[next() % text.size()] = "=\n !\x80" "A"[next() % 6];
      EXPECT_EQ(Base64Decode(text), ReferenceDecode(text));
    }
  }
}

std::string ReferenceEncode(const std::string& bytes) {
  static const char kAlphabet[] =
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  uint32_t acc = 0;
  int bits = 0;
  for (unsigned char c : bytes) {
    acc = (acc << 8) | c;
    bits += 8;
    while (bits >= 6) {
      bits -= 6;
      out += kAlphabet[(acc >> bits) & 63];
    }
  }
  if (bits > 0) out += kAlphabet[(acc << (6 - bits)) & 63];
  while (out.size() % 4 != 0) out += '=';
  return out;
}

// The encoder takes 12 bytes at a time where the CPU allows: every byte value at every
// position, and every length around the block size, against a bitwise reference.
TEST(Base64Test, EncodingMatchesTheReference) {
  for (int byte = 0; byte < 256; ++byte) {
    for (size_t pos = 0; pos < 40; ++pos) {
      std::string bytes(40, '\x5A');
      bytes[pos] = static_cast<char>(byte);
      ASSERT_EQ(Base64Encode(bytes), ReferenceEncode(bytes)) << byte << " at " << pos;
    }
  }
  std::string bytes;
  for (size_t n = 0; n < 100; ++n) {
    ASSERT_EQ(Base64Encode(bytes), ReferenceEncode(bytes)) << n;
    bytes += static_cast<char>(n * 89 + 7);
  }
}

TEST(Base64Test, AppendsAfterExistingText) {
  std::string out = "{\"data\":\"";
  AppendBase64("foobar", &out);
  EXPECT_EQ(out, "{\"data\":\"Zm9vYmFy");
}

}  // namespace
}  // namespace abx
