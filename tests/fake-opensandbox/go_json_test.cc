#include "tests/fake-opensandbox/go_json.h"

#include <gtest/gtest.h>

#include "tests/fake-opensandbox/sse_events.h"

namespace fake_opensandbox {
namespace {

std::string Quote(std::string_view text) {
  std::string out;
  AppendGoJsonString(&out, text);
  return out;
}

TEST(GoJsonTest, HtmlCharactersAreEscapedLikeGo) {
  EXPECT_EQ(Quote("<a&b>"), R"("\u003ca\u0026b\u003e")");
}

TEST(GoJsonTest, ControlCharacters) {
  EXPECT_EQ(Quote(std::string("\t\n\r\b\f\x01\x1f\"\\", 9)), R"("\t\n\r\b\f\u0001\u001f\"\\")");
}

TEST(GoJsonTest, InvalidUtf8BecomesReplacementCharacterPerByte) {
  EXPECT_EQ(Quote("a\xff\xfe" "b"), R"("a\ufffd\ufffdb")");
  EXPECT_EQ(Quote("\xc3"), R"("\ufffd")");          // truncated sequence
  EXPECT_EQ(Quote("\xed\xa0\x80"), R"("\ufffd\ufffd\ufffd")");  // surrogate
  EXPECT_EQ(Quote("\xc0\xaf"), R"("\ufffd\ufffd")");  // overlong
}

TEST(GoJsonTest, ValidUtf8IsKeptAndLineSeparatorsEscaped) {
  EXPECT_EQ(Quote("h\xc3\xa9llo \xe2\x9c\x93 \xf0\x9f\x98\x80"),
            "\"h\xc3\xa9llo \xe2\x9c\x93 \xf0\x9f\x98\x80\"");
  EXPECT_EQ(Quote("\xe2\x80\xa8|\xe2\x80\xa9"), R"("\u2028|\u2029")");
}

TEST(GoJsonTest, LongPlainRunsAndSpecialsAtEveryOffset) {
  for (size_t offset = 0; offset < 20; ++offset) {
    std::string text(offset, 'x');
    text += '<';
    text += std::string(17, 'y');
    EXPECT_EQ(Quote(text), "\"" + std::string(offset, 'x') + "\\u003c" + std::string(17, 'y') + "\"");
  }
}

TEST(GoJsonTest, WriterOmitsNothingAndInsertsCommas) {
  GoJsonWriter w;
  w.StartObject().Key("a").Int(1).Key("b").StartArray().String("x").Bool(true).EndArray();
  w.Key("c").StartObject().EndObject().EndObject();
  EXPECT_EQ(w.str(), R"({"a":1,"b":["x",true],"c":{}})");
  EXPECT_EQ(GoErrorBody("UNKNOWN", ""), R"({"code":"UNKNOWN"})");
}

TEST(SseEventsTest, ExactWireShapes) {
  std::string out;
  AppendInitEvent(&out, "abc", 5);
  AppendPingEvent(&out, 6);
  AppendOutputEvent(&out, true, "e<", 7);
  AppendCompleteEvent(&out, 0, 8);
  AppendErrorEvent(&out, "-1", "signal: killed", 9);
  EXPECT_EQ(out,
            "{\"type\":\"init\",\"text\":\"abc\",\"timestamp\":5}\n\n"
            "{\"type\":\"ping\",\"text\":\"pong\",\"timestamp\":6}\n\n"
            "{\"type\":\"stderr\",\"text\":\"e\\u003c\",\"timestamp\":7}\n\n"
            "{\"type\":\"execution_complete\",\"timestamp\":8}\n\n"
            "{\"type\":\"error\",\"timestamp\":9,\"error\":{\"ename\":\"CommandExecError\","
            "\"evalue\":\"-1\",\"traceback\":[\"signal: killed\"]}}\n\n");
  std::string fast;
  OutputEventWriter(7).Append(&fast, true, "e<");
  EXPECT_EQ(fast, "{\"type\":\"stderr\",\"text\":\"e\\u003c\",\"timestamp\":7}\n\n");
}

}  // namespace
}  // namespace fake_opensandbox
