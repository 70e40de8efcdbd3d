#include "tests/fake-opensandbox/server_clock.h"

#include <gtest/gtest.h>

namespace fake_opensandbox {
namespace {

TimePoint At(int64_t seconds, int64_t nanos = 0) {
  return TimePoint(std::chrono::duration_cast<TimePoint::duration>(
      std::chrono::seconds(seconds) + std::chrono::nanoseconds(nanos)));
}

TEST(ServerClockTest, PydanticFormatOmitsZeroFraction) {
  EXPECT_EQ(FormatPydanticTime(At(1766394485)), "2025-12-22T09:08:05Z");
  EXPECT_EQ(FormatPydanticTime(At(1766394485, 123456789)), "2025-12-22T09:08:05.123456Z");
}

TEST(ServerClockTest, GoFormatKeepsNanosecondsTrimmed) {
  EXPECT_EQ(FormatGoTime(At(1766394485, 123456789)), "2025-12-22T09:08:05.123456789Z");
  EXPECT_EQ(FormatGoTime(At(1766394485, 120000000)), "2025-12-22T09:08:05.12Z");
  EXPECT_EQ(FormatGoTime(At(1766394485)), "2025-12-22T09:08:05Z");
}

TEST(ServerClockTest, HttpDate) {
  EXPECT_EQ(FormatHttpDate(At(1766394485)), "Mon, 22 Dec 2025 09:08:05 GMT");
}

TEST(ServerClockTest, ParsesRfc3339Variants) {
  EXPECT_EQ(ParseDateTime("2025-12-22T09:08:05Z"), At(1766394485));
  EXPECT_EQ(ParseDateTime("2025-12-22T09:08:05.5Z"), At(1766394485, 500000000));
  EXPECT_EQ(ParseDateTime("2025-12-22T11:08:05+02:00"), At(1766394485));
  EXPECT_EQ(ParseDateTime("2025-12-22T09:08:05"), At(1766394485));  // no zone: UTC
  EXPECT_EQ(ParseDateTime("1766394485"), At(1766394485));
  EXPECT_FALSE(ParseDateTime("tomorrow"));
  EXPECT_FALSE(ParseDateTime("2025-13-22T09:08:05Z"));
}

TEST(ServerClockTest, SkewShiftsNow) {
  ServerClock ahead(3600);
  auto diff = ahead.Now() - std::chrono::system_clock::now();
  EXPECT_GT(diff, std::chrono::seconds(3590));
  EXPECT_LT(diff, std::chrono::seconds(3610));
  EXPECT_EQ(ahead.ToReal(ahead.Now()) - std::chrono::system_clock::now() < std::chrono::seconds(5),
            true);
}

}  // namespace
}  // namespace fake_opensandbox
