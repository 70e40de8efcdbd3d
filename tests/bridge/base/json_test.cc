// json::Quote must write exactly what RapidJSON's Writer writes (the bridge used it
// before, and hosts may compare output byte for byte), for every byte value and for
// escapes at every position of the 8-byte scan.
#include "bridge/base/json.h"

#include <gtest/gtest.h>
#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

#include <random>
#include <string>

namespace abx::json {
namespace {

std::string WriterQuote(const std::string& text) {
  rapidjson::StringBuffer buffer;
  rapidjson::Writer<rapidjson::StringBuffer> writer(buffer);
  writer.String(text.data(), static_cast<rapidjson::SizeType>(text.size()));
  return std::string(buffer.GetString(), buffer.GetSize());
}

TEST(JsonQuoteTest, PlainAndEscapes) {
  EXPECT_EQ(Quote(""), "\"\"");
  EXPECT_EQ(Quote("abc"), "\"abc\"");
  EXPECT_EQ(Quote("a\"b\\c/d"), "\"a\\\"b\\\\c/d\"");
  EXPECT_EQ(Quote("\n\t\r\b\f"), "\"\\n\\t\\r\\b\\f\"");
  EXPECT_EQ(Quote(std::string("\x00\x1f\x7f", 3)), "\"\\u0000\\u001F\x7f\"");
  EXPECT_EQ(Quote("h\xC3\xA9llo \xE2\x82\xAC"), "\"h\xC3\xA9llo \xE2\x82\xAC\"");
}

TEST(JsonQuoteTest, EveryByteAtEveryOffsetMatchesRapidJson) {
  for (int c = 0; c < 256; ++c) {
    for (size_t at = 0; at < 20; ++at) {
      std::string text(20, 'x');
      text[at] = static_cast<char>(c);
      ASSERT_EQ(Quote(text), WriterQuote(text)) << "byte " << c << " at " << at;
    }
  }
}

TEST(JsonQuoteTest, RandomTextMatchesRapidJson) {
  std::mt19937 rng(7);
  for (int round = 0; round < 500; ++round) {
    std::string text(rng() % 300, '\0');
    const bool dense = round % 2 == 0;  // many escapes, or few in long clean runs
    for (char& ch : text) {
      const unsigned r = rng();
      ch = static_cast<char>(dense || r % 16 == 0 ? (r >> 8) & 0xFF : 'a' + (r >> 8) % 26);
    }
    ASSERT_EQ(Quote(text), WriterQuote(text));
  }
}

TEST(JsonQuoteTest, AppendQuotedAppends) {
  std::string out = "{\"k\":";
  AppendQuoted(&out, "v\n");
  EXPECT_EQ(out, "{\"k\":\"v\\n\"");
}

}  // namespace
}  // namespace abx::json
