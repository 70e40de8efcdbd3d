#include "bridge/base/time_util.h"

#include <gtest/gtest.h>

namespace abx {
namespace {

TEST(TimeUtilTest, ParsesEveryFractionLengthAndOffsets) {
  EXPECT_EQ(*ParseRfc3339Millis("1970-01-01T00:00:01Z"), 1000);
  EXPECT_EQ(*ParseRfc3339Millis("1970-01-01T00:00:01.5Z"), 1500);
  EXPECT_EQ(*ParseRfc3339Millis("1970-01-01T00:00:01.123456Z"), 1123);
  EXPECT_EQ(*ParseRfc3339Millis("1970-01-01T00:00:01.123456789Z"), 1123);
  EXPECT_EQ(*ParseRfc3339Millis("1970-01-01T01:00:00+01:00"), 0);
  EXPECT_EQ(*ParseRfc3339Millis("1970-01-01T00:00:00"), 0);  // no zone: UTC
  EXPECT_FALSE(ParseRfc3339Millis("yesterday").has_value());
  EXPECT_FALSE(ParseRfc3339Millis("1970-01-01T00:00:00.1234567890Z").has_value());
}

TEST(TimeUtilTest, FormatsUtcWithMillisecondsWhenPresent) {
  EXPECT_EQ(FormatRfc3339Millis(0), "1970-01-01T00:00:00Z");
  EXPECT_EQ(FormatRfc3339Millis(1798200000123), "2026-12-25T12:00:00.123Z");
  EXPECT_EQ(NormalizeRfc3339("2026-12-25T13:00:00.123456+01:00"), "2026-12-25T12:00:00.123Z");
}

TEST(TimeUtilTest, HttpDate) {
  EXPECT_EQ(*ParseHttpDateMillis("Thu, 01 Jan 1970 00:01:00 GMT"), 60000);
  EXPECT_FALSE(ParseHttpDateMillis("not a date").has_value());
}

}  // namespace
}  // namespace abx
