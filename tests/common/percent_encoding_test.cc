#include "common/percent_encoding.h"

#include <string>

#include "gtest/gtest.h"

namespace abx {
namespace {

TEST(PercentEncodeTest, KeepsOnlyUnreservedCharacters) {
  EXPECT_EQ(PercentEncode("AZaz09-_.~"), "AZaz09-_.~");
  EXPECT_EQ(PercentEncode("/tmp/a b&c=d?e#f+g%"), "%2Ftmp%2Fa%20b%26c%3Dd%3Fe%23f%2Bg%25");
  EXPECT_EQ(PercentEncode("é"), "%C3%A9");
  EXPECT_EQ(PercentEncode(std::string("\0\xff", 2)), "%00%FF");
  EXPECT_EQ(PercentEncode(""), "");
}

TEST(PercentDecodeTest, InvertsEncoding) {
  std::string all;
  for (int c = 0; c < 256; ++c) all += static_cast<char>(c);
  EXPECT_EQ(PercentDecode(PercentEncode(all)), all);
  EXPECT_EQ(PercentDecode("a+b"), "a+b");
  EXPECT_EQ(PercentDecode("a+b", /*plus_is_space=*/true), "a b");
  EXPECT_EQ(PercentDecode("%2f%2F"), "//");
}

TEST(PercentDecodeTest, RejectsMalformedEscapes) {
  EXPECT_EQ(PercentDecode("%"), std::nullopt);
  EXPECT_EQ(PercentDecode("%4"), std::nullopt);
  EXPECT_EQ(PercentDecode("%zz"), std::nullopt);
  EXPECT_EQ(PercentDecode("ab%"), std::nullopt);
}

TEST(PercentDecodeLenientTest, ReadsGrpcMessagesAndKeepsMalformedEscapes) {
  EXPECT_EQ(PercentDecodeLenient("plain text"), "plain text");
  EXPECT_EQ(PercentDecodeLenient("100%25 sure%0Anext line"), "100% sure\nnext line");
  EXPECT_EQ(PercentDecodeLenient("%C3%A9t%c3%a9"), "été");
  // Malformed escapes stay as they are.
  EXPECT_EQ(PercentDecodeLenient("50% off"), "50% off");
  EXPECT_EQ(PercentDecodeLenient("end%"), "end%");
  EXPECT_EQ(PercentDecodeLenient("end%4"), "end%4");
  EXPECT_EQ(PercentDecodeLenient("%zz"), "%zz");
}

TEST(PercentDecodeLenientTest, PlusIsASpaceOnlyWhenAsked) {
  EXPECT_EQ(PercentDecodeLenient("a+b%2B"), "a+b+");
  EXPECT_EQ(PercentDecodeLenient("a+b%2B", /*plus_is_space=*/true), "a b+");
}

}  // namespace
}  // namespace abx
