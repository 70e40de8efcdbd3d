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

}  // namespace
}  // namespace abx::core
