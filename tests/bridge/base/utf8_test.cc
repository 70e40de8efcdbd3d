#include "bridge/base/utf8.h"

#include <gtest/gtest.h>

namespace abx {
namespace {

TEST(Utf8Test, Validity) {
  EXPECT_TRUE(IsValidUtf8("plain"));
  EXPECT_TRUE(IsValidUtf8("h\xC3\xA9 \xF0\x9F\x98\x80"));
  EXPECT_FALSE(IsValidUtf8("\xC3"));
  EXPECT_FALSE(IsValidUtf8("\xC0\xAF"));          // overlong
  EXPECT_FALSE(IsValidUtf8("\xED\xA0\x80"));      // surrogate
  EXPECT_FALSE(IsValidUtf8("\xFF"));
}

TEST(Utf8Test, InvalidBytesBecomeReplacementCharacters) {
  EXPECT_EQ(ToValidUtf8("a\xFF" "b"), "a\xEF\xBF\xBD" "b");
}

TEST(Utf8Test, CompletePrefixDropsOnlyACutSequence) {
  EXPECT_EQ(CompleteUtf8Prefix("ab"), 2u);
  EXPECT_EQ(CompleteUtf8Prefix("a\xE6\x97"), 1u);       // 日 cut after 2 of 3 bytes
  EXPECT_EQ(CompleteUtf8Prefix("a\xE6\x97\xA5"), 4u);   // whole
  EXPECT_EQ(CompleteUtf8Prefix("a\xF0\x9F\x98"), 1u);
}

}  // namespace
}  // namespace abx
