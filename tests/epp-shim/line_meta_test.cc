#include "epp-shim/line_meta.h"

#include <string>

#include "gtest/gtest.h"
#include "rapidjson/document.h"

namespace abx {
namespace {

using Kind = LineMeta::Kind;

constexpr size_t kDeep = 8 << 20;  // 8 MiB of '[' would overflow a recursive parser

TEST(LineMetaTest, Request) {
  LineMeta meta = ParseLineMeta(R"({"jsonrpc":"2.0","id":7,"method":"sandbox.get","params":{}})");
  EXPECT_EQ(meta.kind, Kind::kRequest);
  EXPECT_EQ(meta.method, "sandbox.get");
  EXPECT_EQ(meta.id_json, "7");
}

TEST(LineMetaTest, IdsAreWrittenCompactly) {
  EXPECT_EQ(ParseLineMeta(R"({"method":"m","id":"a"})").id_json, R"("a")");
  EXPECT_EQ(ParseLineMeta(R"({"method":"m","id" : "\u0061\"b"})").id_json, R"("a\"b")");
  EXPECT_EQ(ParseLineMeta(R"({"method":"m","id":-3})").id_json, "-3");
  EXPECT_EQ(ParseLineMeta(R"({"method":"m","id":1.5})").id_json, "1.5");
  EXPECT_EQ(ParseLineMeta(R"({"method":"m","id":18446744073709551615})").id_json,
            "18446744073709551615");
  EXPECT_EQ(ParseLineMeta(R"({"method":"m","id":null})").id_json, "null");
  EXPECT_EQ(CanonicalIdJson(R"("x")"), R"("x")");
  EXPECT_EQ(CanonicalIdJson("{}"), "");
}

TEST(LineMetaTest, OnlyTheTopLevelCounts) {
  LineMeta meta = ParseLineMeta(
      R"({"params":{"id":99,"method":"inner"},"method":"exec.start","id":"top"})");
  EXPECT_EQ(meta.kind, Kind::kRequest);
  EXPECT_EQ(meta.method, "exec.start");
  EXPECT_EQ(meta.id_json, R"("top")");
}

TEST(LineMetaTest, FirstIdWins) {
  EXPECT_EQ(ParseLineMeta(R"({"method":"m","id":1,"id":2})").id_json, "1");
}

TEST(LineMetaTest, Notification) {
  LineMeta meta = ParseLineMeta(R"({"jsonrpc":"2.0","method":"$/cancel","params":{"id":3}})");
  EXPECT_EQ(meta.kind, Kind::kNotification);
  EXPECT_EQ(meta.method, "$/cancel");
  EXPECT_TRUE(meta.id_json.empty());
}

TEST(LineMetaTest, OtherLines) {
  EXPECT_EQ(ParseLineMeta("").kind, Kind::kOther);
  EXPECT_EQ(ParseLineMeta("not json").kind, Kind::kOther);
  EXPECT_EQ(ParseLineMeta(R"({"method":"m","id":1)").kind, Kind::kOther);   // truncated
  EXPECT_EQ(ParseLineMeta(R"({"method":"m","id":1} x)").kind, Kind::kOther);  // trailing
  EXPECT_EQ(ParseLineMeta(R"([{"method":"m","id":1}])").kind, Kind::kOther);  // batch
  EXPECT_EQ(ParseLineMeta(R"({"method":5,"id":1})").kind, Kind::kOther);
  EXPECT_EQ(ParseLineMeta(R"({"method":"m","id":{"a":1}})").kind, Kind::kOther);
  EXPECT_EQ(ParseLineMeta(R"({"method":"m","id":[1]})").kind, Kind::kOther);
  EXPECT_EQ(ParseLineMeta(std::string("{\"method\":\"m\",\"id\":1}\0", 23)).kind, Kind::kOther);
  // CRLF: the '\r' is whitespace to JSON, so the line still parses.
  EXPECT_EQ(ParseLineMeta("{\"method\":\"m\",\"id\":1}\r").kind, Kind::kRequest);
}

TEST(LineMetaTest, ResponsesAreRecognised) {
  LineMeta ok = ParseLineMeta(R"({"jsonrpc":"2.0","id":1,"result":{"protocol":"EPP/1"}})");
  EXPECT_EQ(ok.kind, Kind::kOther);
  EXPECT_TRUE(ok.has_result);
  EXPECT_FALSE(ok.has_error);
  LineMeta failed = ParseLineMeta(R"({"jsonrpc":"2.0","id":1,"error":{"code":-32000}})");
  EXPECT_TRUE(failed.has_error);
  EXPECT_FALSE(failed.has_result);
  EXPECT_TRUE(ParseLineMeta(R"({"id":1,"result":null})").has_result);
  EXPECT_FALSE(ParseLineMeta(R"({"id":1,"x":{"result":1}})").has_result);
}

TEST(LineMetaTest, PrefixKeepsWhatIsComplete) {
  LineMeta meta = ParseLinePrefixMeta(R"({"jsonrpc":"2.0","id":42,"method":"files.write","params":{"data":"AAAA)");
  EXPECT_EQ(meta.kind, Kind::kRequest);
  EXPECT_EQ(meta.id_json, "42");
  EXPECT_EQ(meta.method, "files.write");
  // An id cut at the end of the prefix may have lost digits: not trusted.
  LineMeta cut = ParseLinePrefixMeta(R"({"method":"files.write","id":12)");
  EXPECT_NE(cut.kind, Kind::kRequest);
  // A string id cut in the middle never completes.
  EXPECT_NE(ParseLinePrefixMeta(R"({"method":"m","id":"abc)").kind, Kind::kRequest);
  // An id after the cut is unknown.
  EXPECT_EQ(ParseLinePrefixMeta(R"({"method":"m","params":{"data":"xxx)").kind,
            Kind::kNotification);
  // Like the bridge, an id after a nested value is not trusted.
  EXPECT_NE(ParseLinePrefixMeta(R"({"params":{"a":1},"id":5,"method":"m","x":"yyy)").kind,
            Kind::kRequest);
  // The id alone is enough: the bridge answers E8008 with it.
  LineMeta id_only = ParseLinePrefixMeta(R"({"jsonrpc":"2.0","id":"q","params":{"data":"zz)");
  EXPECT_EQ(id_only.kind, Kind::kRequest);
  EXPECT_EQ(id_only.id_json, R"("q")");
}

TEST(LineMetaTest, DeepNestingDoesNotExhaustTheStack) {
  const std::string deep(kDeep, '[');
  EXPECT_EQ(ParseLineMeta(deep).kind, Kind::kOther);
  EXPECT_EQ(ParseLineMeta("{\"method\":\"m\",\"id\":1,\"p\":" + deep).kind, Kind::kOther);
  EXPECT_EQ(ParseLinePrefixMeta("{\"id\":1,\"p\":" + deep).kind, Kind::kRequest);
}

TEST(LineMetaTest, InvalidUtf8IsNotJson) {
  // The bridge validates encoding and answers such a line with id null: not tracked.
  EXPECT_EQ(ParseLineMeta("{\"method\":\"m\",\"id\":1,\"s\":\"\xff\"}").kind, Kind::kOther);
}

TEST(LineMetaTest, UnreachableResponseIsValidJsonRpc) {
  std::string line = BridgeUnreachableResponse(R"("a")", "the bridge went away: \"x\"\n");
  rapidjson::Document doc;
  doc.Parse(line.c_str());
  ASSERT_FALSE(doc.HasParseError()) << line;
  EXPECT_STREQ(doc["jsonrpc"].GetString(), "2.0");
  EXPECT_STREQ(doc["id"].GetString(), "a");
  EXPECT_EQ(doc["error"]["code"].GetInt(), -32001);
  EXPECT_STREQ(doc["error"]["message"].GetString(), "the bridge went away: \"x\"\n");
  EXPECT_STREQ(doc["error"]["data"]["epp_code"].GetString(), "E8002");
  EXPECT_TRUE(doc["error"]["data"]["retryable"].GetBool());
  EXPECT_EQ(line.find('\n'), std::string::npos) << "must stay one line";

  EXPECT_NE(BridgeUnreachableResponse("7", "m").find(R"("id":7,)"), std::string::npos);
  std::string null_id = BridgeUnreachableResponse("", "m");
  EXPECT_NE(null_id.find(R"("id":null)"), std::string::npos) << null_id;
}

// A line is scanned 16 bytes at a time when its buffer has room past the end, byte by
// byte otherwise: both must read the same lines the same way.
TEST(LineMetaTest, TightAndRoomyBuffersAgree) {
  const std::string lines[] = {
      R"({"jsonrpc":"2.0","id":"a\"b","method":"files.write","params":{"data":"QUJD\u0041=="}})",
      R"({"method":"x","id":12345678901234567890})",
      "{\"method\":\"m\",\"id\":1,\"params\":{\"s\":\"\xC3\xA9\"}}",
      "{\"method\":\"m\",\"id\":1,\"params\":{\"s\":\"\xC3\"}}",  // invalid UTF-8
      "{\"method\":\"m\",\"id\":1,\"params\":{\"s\":\"a\tb\"}}",    // raw tab: not JSON
      R"({"method":"m","id":1} trailing)",
      R"(  {"method" : "m" , "id" : null }  )",
  };
  for (const std::string& line : lines) {
    std::string tight;
    tight.reserve(line.size());
    tight.assign(line);
    tight.shrink_to_fit();
    std::string roomy;
    roomy.reserve(line.size() + 64);
    roomy.assign(line);
    const LineMeta a = ParseLineMeta(tight), b = ParseLineMeta(roomy);
    EXPECT_EQ(a.kind, b.kind) << line;
    EXPECT_EQ(a.method, b.method) << line;
    EXPECT_EQ(a.id_json, b.id_json) << line;
  }
  EXPECT_EQ(ParseLineMeta(lines[0]).id_json, R"("a\"b")");
  EXPECT_EQ(ParseLineMeta(lines[3]).kind, Kind::kOther);
  EXPECT_EQ(ParseLineMeta(lines[4]).kind, Kind::kOther);
}

// RapidJSON 1.1's SSE2 code takes 0x1A-0x1F for text when reading and writing: raw, they
// make a line not JSON wherever they fall; escaped in an id, they are written back
// escaped, as the bridge writes them.
TEST(LineMetaTest, ControlCharactersAroundTheSimdBlocks) {
  for (size_t pad = 0; pad < 40; ++pad) {
    const std::string text(pad, 'x');
    std::string raw = "{\"method\":\"m\",\"id\":1,\"params\":{\"s\":\"" + text + "\x1C" + text + "\"}}";
    raw.reserve(raw.size() + 64);
    EXPECT_EQ(ParseLineMeta(raw).kind, Kind::kOther) << pad;
    std::string escaped = "{\"method\":\"m\",\"id\":\"" + text + "\\u001c" + text + "\"}";
    escaped.reserve(escaped.size() + 64);
    EXPECT_EQ(ParseLineMeta(escaped).id_json, "\"" + text + "\\u001C" + text + "\"") << pad;
  }
  EXPECT_EQ(BridgeUnreachableResponse("1", "a\x1B" "b"),
            "{\"jsonrpc\":\"2.0\",\"id\":1,\"error\":{\"code\":-32001,\"message\":\"a\\u001Bb\","
            "\"data\":{\"epp_code\":\"E8002\",\"retryable\":true}}}");
}

TEST(LineMetaTest, MegabytesOfBase64AfterTheId) {
  std::string line = R"({"jsonrpc":"2.0","id":77,"method":"files.write","params":{"data":")";
  line.append(6 << 20, 'Q');
  line += R"(","path":"/a"}})";
  const LineMeta meta = ParseLineMeta(line);
  EXPECT_EQ(meta.kind, Kind::kRequest);
  EXPECT_EQ(meta.id_json, "77");
  line[line.size() / 2] = '\x80';  // one invalid byte deep inside
  EXPECT_EQ(ParseLineMeta(line).kind, Kind::kOther);
}

}  // namespace
}  // namespace abx
