#include "bridge/opensandbox/execd_events.h"

#include <chrono>
#include <random>
#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace abx::opensandbox {
namespace {

// What a parser saw, in a form that is easy to compare.
struct Seen {
  std::vector<ExecdEvent> events;
  std::vector<std::pair<std::string, std::string>> garbage;  // line, reason
};

// A copyable summary of an event for comparisons.
std::string Describe(const ExecdEvent& e) {
  std::string s = (e.kind == ExecdEventKind::kTyped ? "typed " : "untyped ") + e.type + "|" +
                  e.text + "|";
  s += e.execution_time_ms ? std::to_string(*e.execution_time_ms) : "-";
  s += "|" + std::to_string(e.timestamp_ms) + "|";
  s += e.execution_count ? std::to_string(*e.execution_count) : "-";
  if (e.error) {
    s += "|error " + e.error->ename + "," + e.error->evalue;
    for (const auto& line : e.error->traceback) s += "," + line;
  }
  s += "|" + e.code + "|" + e.message + "|" + e.results_json;
  return s;
}

std::vector<std::string> Describe(const Seen& seen) {
  std::vector<std::string> out;
  for (const auto& e : seen.events) out.push_back(Describe(e));
  for (const auto& [line, reason] : seen.garbage) out.push_back("garbage " + reason + ": " + line);
  return out;
}

// Feeds `input` split at the given offsets (sorted, within the input), then finishes.
Seen Parse(const std::string& input, const std::vector<size_t>& cuts = {}) {
  Seen seen;
  ExecdEventParser parser(
      [&](const ExecdEvent& e) {
        seen.events.push_back(e);
        return true;
      },
      [&](std::string_view line, std::string_view reason) {
        seen.garbage.emplace_back(std::string(line), std::string(reason));
        return true;
      });
  size_t at = 0;
  for (size_t cut : cuts) {
    EXPECT_TRUE(parser.Feed(input.data() + at, cut - at));
    at = cut;
  }
  EXPECT_TRUE(parser.Feed(input.data() + at, input.size() - at));
  EXPECT_TRUE(parser.Finish());
  EXPECT_EQ(parser.pending_bytes(), 0u);
  return seen;
}

// The framing execd really sends (docs/opensandbox.md §2.4–2.6), with a multi-byte text.
const std::string kExecdStream =
    "{\"type\":\"init\",\"text\":\"9f0c1d2e3f405162738495a6b7c8d9e0\",\"timestamp\":1718000000000}\n\n"
    "{\"type\":\"ping\",\"text\":\"pong\",\"timestamp\":1718000000001}\n\n"
    "{\"type\":\"stdout\",\"text\":\"h\xc3\xa9llo \xe4\xb8\x96\xe7\x95\x8c \xf0\x9f\x8e\x89\","
    "\"timestamp\":1718000000002}\n\n"
    "{\"type\":\"stderr\",\"text\":\"\\n\",\"timestamp\":1718000000003}\n\n"
    "{\"type\":\"stdout\",\"text\":\"a \\u003cb\\u003e \\u0026 \\\"q\\\" \\\\ \\t\",\"timestamp\":1718000000004}\n\n"
    "{\"type\":\"error\",\"error\":{\"ename\":\"CommandExecError\",\"evalue\":\"3\","
    "\"traceback\":[\"exit status 3\"]},\"timestamp\":1718000000005}\n\n"
    "{\"type\":\"execution_complete\",\"execution_time\":12,\"timestamp\":1718000000006}\n\n";

const std::vector<std::string> kExecdEvents = {
    "typed init|9f0c1d2e3f405162738495a6b7c8d9e0|-|1718000000000|-|||",
    "typed ping|pong|-|1718000000001|-|||",
    "typed stdout|h\xc3\xa9llo \xe4\xb8\x96\xe7\x95\x8c \xf0\x9f\x8e\x89|-|1718000000002|-|||",
    "typed stderr|\n|-|1718000000003|-|||",
    "typed stdout|a <b> & \"q\" \\ \t|-|1718000000004|-|||",
    "typed error||-|1718000000005|-|error CommandExecError,3,exit status 3|||",
    "typed execution_complete||12|1718000000006|-|||",
};

TEST(ExecdEventParserTest, ParsesExecdFraming) {
  EXPECT_EQ(Describe(Parse(kExecdStream)), kExecdEvents);
}

TEST(ExecdEventParserTest, SameEventsWhereverTheStreamIsSplit) {
  for (size_t cut = 0; cut <= kExecdStream.size(); ++cut) {
    ASSERT_EQ(Describe(Parse(kExecdStream, {cut})), kExecdEvents) << "split at " << cut;
  }
}

TEST(ExecdEventParserTest, SameEventsFedByteByByte) {
  std::vector<size_t> cuts;
  for (size_t i = 1; i < kExecdStream.size(); ++i) cuts.push_back(i);
  EXPECT_EQ(Describe(Parse(kExecdStream, cuts)), kExecdEvents);
}

TEST(ExecdEventParserTest, SameEventsForRandomChunkings) {
  std::mt19937 random(42);
  for (int round = 0; round < 300; ++round) {
    std::vector<size_t> cuts;
    for (size_t at = 0;;) {
      at += 1 + random() % 40;
      if (at >= kExecdStream.size()) break;
      cuts.push_back(at);
    }
    ASSERT_EQ(Describe(Parse(kExecdStream, cuts)), kExecdEvents) << "round " << round;
  }
}

TEST(ExecdEventParserTest, SingleNewlineFramingOfMetricsWatch) {
  std::string stream =
      "{\"cpu_count\":2,\"timestamp\":1}\n{\"error\":\"read failed\"}\n{\"cpu_count\":2,\"timestamp\":3}\n";
  EXPECT_EQ(Describe(Parse(stream)),
            (std::vector<std::string>{"untyped ||-|1|-|||", "untyped ||-|0|-||read failed|",
                                      "untyped ||-|3|-|||"}));
}

TEST(ExecdEventParserTest, ToleratesStandardSseFraming) {
  std::string stream =
      ": a comment\r\n"
      "event: message\r\n"
      "id: 7\r\n"
      "retry: 1000\r\n"
      "data: {\"type\":\"init\",\"text\":\"abc\"}\r\n"
      "\r\n"
      "data:{\"type\":\"stdout\",\"text\":\"x\"}\n\n"
      "   data:   {\"type\":\"stderr\",\"text\":\"y\"}   \t\r\n\r\n"
      "data:\n\n"
      "  {\"type\":\"ping\",\"text\":\"pong\"}  \r\n";
  for (size_t cut = 0; cut <= stream.size(); ++cut) {
    Seen seen;
    ExecdEventParser split([&](const ExecdEvent& e) {
      seen.events.push_back(e);
      return true;
    });
    split.Feed(stream.data(), cut);
    split.Feed(stream.data() + cut, stream.size() - cut);
    split.Finish();
    ASSERT_EQ(Describe(seen),
              (std::vector<std::string>{"typed init|abc|-|0|-|||", "typed stdout|x|-|0|-|||",
                                        "typed stderr|y|-|0|-|||", "typed ping|pong|-|0|-|||"}))
        << "split at " << cut;
    EXPECT_EQ(split.ignored_lines(), 5u);
    EXPECT_EQ(split.garbage_lines(), 0u);
  }
}

TEST(ExecdEventParserTest, ReportsGarbageLinesAndKeepsGoing) {
  std::string stream =
      "{\"type\":\"init\",\"text\":\"a\"}\n\n"
      "not json at all\n\n"
      "{\"type\":\"stdout\",\"text\":\"unterminated\n\n"
      "[1,2,3]\n\n"
      "42\n\n"
      "\"just a string\"\n\n"
      "{\"type\":5}\n\n"
      "{\"type\":[\"x\"]}\n\n"
      "{\"type\":true}\n\n"
      "{\"type\":\"stdout\",\"text\":\"b\"} trailing\n\n"
      "<html>502 Bad Gateway</html>\n\n"
      "{\"type\":\"stdout\",\"text\":\"c\"}\n\n";
  Seen seen = Parse(stream);
  ASSERT_EQ(seen.events.size(), 2u);
  EXPECT_EQ(seen.events[0].text, "a");
  EXPECT_EQ(seen.events[1].text, "c");
  std::vector<std::pair<std::string, std::string>> expected = {
      {"not json at all", "not JSON"},
      {"{\"type\":\"stdout\",\"text\":\"unterminated", "not JSON"},
      {"[1,2,3]", "not a JSON object"},
      {"42", "not a JSON object"},
      {"\"just a string\"", "not a JSON object"},
      {"{\"type\":5}", "\"type\" is not a string"},
      {"{\"type\":[\"x\"]}", "\"type\" is not a string"},
      {"{\"type\":true}", "\"type\" is not a string"},
      {"{\"type\":\"stdout\",\"text\":\"b\"} trailing", "trailing bytes after the JSON object"},
      {"<html>502 Bad Gateway</html>", "not JSON"},
  };
  EXPECT_EQ(seen.garbage, expected);
}

TEST(ExecdEventParserTest, CountsGarbageWithoutACallback) {
  ExecdEventParser parser([](const ExecdEvent&) { return true; });
  parser.Feed("garbage\n\n{\"type\":\"ping\"}\n\n{oops}\n");
  parser.Finish();
  EXPECT_EQ(parser.events(), 1u);
  EXPECT_EQ(parser.garbage_lines(), 2u);
}

TEST(ExecdEventParserTest, NulByteInsideALineIsGarbage) {
  Seen seen = Parse(std::string("{\"type\":\"stdout\"}\0xyz\n\n", 23));
  EXPECT_TRUE(seen.events.empty());
  ASSERT_EQ(seen.garbage.size(), 1u);
}

// RapidJSON 1.1's SSE2 scan takes 0x1A-0x1F for text: such raw bytes, and every other
// byte no JSON may hold, make a line garbage wherever they fall; escaped, they are text,
// and captured results keep them escaped.
TEST(ExecdEventParserTest, RawControlCharactersAndBadUtf8AreGarbageEscapedOnesAreText) {
  for (size_t pad = 0; pad < 40; ++pad) {
    const std::string text(pad, 'a');
    for (const char* bad : {"\x1A", "\x1F", "\x01", "\xFF", "\xC3"}) {
      Seen seen = Parse("{\"type\":\"stdout\",\"text\":\"" + text + bad + text + "\"}\n\n");
      EXPECT_TRUE(seen.events.empty()) << pad;
      EXPECT_EQ(seen.garbage.size(), 1u) << pad;
    }
    Seen seen = Parse("{\"type\":\"result\",\"text\":\"" + text + "\\u001a\",\"results\":{\"" + text +
                      "\\u001e\":\"\\u001f" + text + "\"}}\n\n");
    ASSERT_EQ(seen.events.size(), 1u) << pad;
    EXPECT_EQ(seen.events[0].text, text + "\x1A");
    EXPECT_EQ(seen.events[0].results_json, "{\"" + text + "\\u001E\":\"\\u001F" + text + "\"}");
  }
}

TEST(ExecdEventParserTest, BareObjectWithoutTypeIsItsOwnKind) {
  // What execd appends to a session stream when the run times out (docs/opensandbox.md §2.12).
  Seen seen = Parse(
      "{\"type\":\"init\",\"text\":\"s\"}\n\n"
      "{\"code\":\"RUNTIME_ERROR\",\"message\":\"error running in session. timeout after 5s\"}\n\n");
  ASSERT_EQ(seen.events.size(), 2u);
  EXPECT_EQ(seen.events[1].kind, ExecdEventKind::kUntyped);
  EXPECT_EQ(seen.events[1].type, "");
  EXPECT_EQ(seen.events[1].code, "RUNTIME_ERROR");
  EXPECT_EQ(seen.events[1].message, "error running in session. timeout after 5s");
  // An explicit null type reads as no type.
  seen = Parse("{\"type\":null,\"code\":\"X\"}\n");
  ASSERT_EQ(seen.events.size(), 1u);
  EXPECT_EQ(seen.events[0].kind, ExecdEventKind::kUntyped);
}

TEST(ExecdEventParserTest, ReadsErrorsOfStartFailuresAndSignals) {
  Seen seen = Parse(
      "{\"type\":\"error\",\"error\":{\"ename\":\"CommandExecError\",\"evalue\":\"fork/exec /bin/bash: "
      "operation not permitted\",\"traceback\":[]}}\n\n"
      "{\"type\":\"error\",\"error\":{\"ename\":\"CommandExecError\",\"evalue\":\"-1\",\"traceback\":"
      "[\"signal: killed\",\"second\"],\"extra\":{\"deep\":[1,{\"ename\":\"no\"}]}}}\n\n"
      "{\"type\":\"error\",\"error\":{\"evalue\":7}}\n\n");
  ASSERT_EQ(seen.events.size(), 3u);
  ASSERT_TRUE(seen.events[0].error);
  EXPECT_EQ(seen.events[0].error->evalue, "fork/exec /bin/bash: operation not permitted");
  EXPECT_TRUE(seen.events[0].error->traceback.empty());
  ASSERT_TRUE(seen.events[1].error);
  EXPECT_EQ(seen.events[1].error->ename, "CommandExecError");
  EXPECT_EQ(seen.events[1].error->evalue, "-1");
  EXPECT_EQ(seen.events[1].error->traceback, (std::vector<std::string>{"signal: killed", "second"}));
  EXPECT_EQ(seen.events[2].error->evalue, "7");
}

TEST(ExecdEventParserTest, KeepsCodeInterpreterFields) {
  Seen seen = Parse(
      "{\"type\":\"execution_count\",\"execution_count\":4}\n\n"
      "{\"type\":\"result\",\"results\":{\"text\":\"2\",\"image/png\":\"AAA\",\"n\":[1,2.5,null,true]},"
      "\"unknown\":{\"a\":[{}]},\"timestamp\":9}\n\n");
  ASSERT_EQ(seen.events.size(), 2u);
  EXPECT_EQ(seen.events[0].execution_count, 4);
  EXPECT_EQ(seen.events[1].results_json,
            "{\"text\":\"2\",\"image/png\":\"AAA\",\"n\":[1,2.5,null,true]}");
  EXPECT_EQ(seen.events[1].timestamp_ms, 9);
  EXPECT_EQ(seen.events[1].text, "");
}

TEST(ExecdEventParserTest, FieldsDoNotLeakIntoTheNextEvent) {
  Seen seen = Parse(
      "{\"type\":\"error\",\"text\":\"t\",\"execution_time\":5,\"execution_count\":1,\"timestamp\":2,"
      "\"error\":{\"ename\":\"E\"},\"code\":\"C\",\"message\":\"M\",\"results\":{\"a\":1}}\n\n"
      "{\"type\":\"ping\"}\n\n");
  ASSERT_EQ(seen.events.size(), 2u);
  EXPECT_EQ(Describe(seen.events[1]), "typed ping||-|0|-|||");
}

TEST(ExecdEventParserTest, LastLineWithoutNewlineIsParsedOnFinish) {
  Seen seen;
  ExecdEventParser parser([&](const ExecdEvent& e) {
    seen.events.push_back(e);
    return true;
  });
  parser.Feed("{\"type\":\"ping\"}\n\n{\"type\":\"execution_complete\"}");
  EXPECT_EQ(seen.events.size(), 1u);
  EXPECT_GT(parser.pending_bytes(), 0u);
  parser.Finish();
  ASSERT_EQ(seen.events.size(), 2u);
  EXPECT_EQ(seen.events[1].type, "execution_complete");
}

TEST(ExecdEventParserTest, CallbackCanStopTheParser) {
  int calls = 0;
  ExecdEventParser parser([&](const ExecdEvent& e) {
    ++calls;
    return e.type != "execution_complete";
  });
  EXPECT_FALSE(parser.Feed(kExecdStream + kExecdStream));
  EXPECT_EQ(calls, 7);
  EXPECT_FALSE(parser.Feed("{\"type\":\"ping\"}\n"));
  EXPECT_FALSE(parser.Finish());
  EXPECT_EQ(calls, 7);

  ExecdEventParser stops_on_garbage([](const ExecdEvent&) { return true; },
                             [](std::string_view, std::string_view) { return false; });
  EXPECT_FALSE(stops_on_garbage.Feed("junk\n{\"type\":\"ping\"}\n"));
  EXPECT_EQ(stops_on_garbage.events(), 0u);
}

TEST(ExecdEventParserTest, GarbageExcerptIsBounded) {
  std::string junk(10000, 'x');
  Seen seen = Parse(junk + "\n\n");
  ASSERT_EQ(seen.garbage.size(), 1u);
  EXPECT_EQ(seen.garbage[0].first.size(), ExecdEventParser::kGarbageExcerptBytes);
}

TEST(ExecdEventParserTest, OverlongLineIsReportedOnceAndSkipped) {
  Seen seen;
  ExecdEventParser parser(
      [&](const ExecdEvent& e) {
        seen.events.push_back(e);
        return true;
      },
      [&](std::string_view line, std::string_view reason) {
        seen.garbage.emplace_back(std::string(line), std::string(reason));
        return true;
      },
      /*max_line_bytes=*/100);
  std::string big = "{\"type\":\"stdout\",\"text\":\"" + std::string(500, 'a') + "\"}\n\n";
  std::string stream = "{\"type\":\"init\"}\n\n" + big + "{\"type\":\"ping\"}\n\n" + big;
  for (size_t at = 0; at < stream.size(); at += 7) {
    parser.Feed(stream.data() + at, std::min<size_t>(7, stream.size() - at));
  }
  parser.Feed("{\"type\":\"execution_complete\"}\n");
  parser.Finish();
  ASSERT_EQ(seen.events.size(), 3u);
  EXPECT_EQ(seen.events[1].type, "ping");
  EXPECT_EQ(seen.events[2].type, "execution_complete");
  ASSERT_EQ(seen.garbage.size(), 2u);
  EXPECT_EQ(seen.garbage[0].second, "line longer than the limit");
  EXPECT_EQ(seen.garbage[0].first.substr(0, 10), "{\"type\":\"s");
  EXPECT_LT(parser.pending_bytes(), 100u);
}

TEST(ExecdEventParserTest, BigEventsInSmallChunksAreLinear) {
  // 16 MiB of text with escapes, fed in 4 KiB pieces: quadratic copying would take minutes.
  std::string text;
  std::string escaped;
  for (size_t i = 0; text.size() < (16u << 20); ++i) {
    if (i % 100 == 99) {
      text += "\n\"";
      escaped += "\\n\\\"";
    } else {
      char c = static_cast<char>('a' + i % 26);
      text += c;
      escaped += c;
    }
  }
  std::string stream = "{\"type\":\"stdout\",\"text\":\"" + escaped + "\",\"timestamp\":5}\n\n" +
                       "{\"type\":\"execution_complete\"}\n\n";
  size_t big_events = 0;
  ExecdEventParser parser([&](const ExecdEvent& e) {
    if (e.type == "stdout") {
      EXPECT_EQ(e.text.size(), text.size());
      EXPECT_TRUE(e.text == text);
      EXPECT_EQ(e.timestamp_ms, 5);
      ++big_events;
    }
    return true;
  });
  auto start = std::chrono::steady_clock::now();
  for (size_t at = 0; at < stream.size(); at += 4096) {
    parser.Feed(stream.data() + at, std::min<size_t>(4096, stream.size() - at));
  }
  parser.Finish();
  auto elapsed = std::chrono::steady_clock::now() - start;
  EXPECT_EQ(big_events, 1u);
  EXPECT_EQ(parser.events(), 2u);
  EXPECT_LT(std::chrono::duration_cast<std::chrono::milliseconds>(elapsed).count(), 3000);
}

TEST(ExecdEventParserTest, ManySmallEventsAreFast) {
  std::string one = "{\"type\":\"stdout\",\"text\":\"line of output number 12345\",\"timestamp\":1718000000000}\n\n";
  std::string chunk;
  while (chunk.size() < (1u << 20)) chunk += one;
  const size_t per_chunk = chunk.size() / one.size();
  size_t events = 0;
  ExecdEventParser parser([&](const ExecdEvent&) {
    ++events;
    return true;
  });
  auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < 32; ++i) parser.Feed(chunk);  // 32 MiB
  auto elapsed = std::chrono::steady_clock::now() - start;
  EXPECT_EQ(events, per_chunk * 32);
  double seconds = std::chrono::duration<double>(elapsed).count();
  std::printf("parsed 32 MiB of small events in %.3f s (%.0f MiB/s)\n", seconds, 32 / seconds);
  EXPECT_LT(seconds, 5.0);
}

}  // namespace
}  // namespace abx::opensandbox
