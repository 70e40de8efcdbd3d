#include "bridge/core/base64.h"

#include <gtest/gtest.h>

namespace abx::core {
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

}  // namespace
}  // namespace abx::core
