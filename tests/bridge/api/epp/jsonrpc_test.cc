#include "bridge/api/epp/jsonrpc.h"

#include <gtest/gtest.h>

namespace abx::epp {
namespace {

TEST(JsonRpcTest, ParsesARequest) {
  std::string id;
  auto env = ParseEnvelope(R"({"jsonrpc":"2.0","id":7,"method":"m","params":{"a":1}})", &id);
  ASSERT_TRUE(env.ok());
  EXPECT_TRUE(env->has_id);
  EXPECT_EQ(env->id_json, "7");
  EXPECT_EQ(env->method, "m");
  EXPECT_TRUE(env->params->IsObject());
}

TEST(JsonRpcTest, NotificationHasNoId) {
  std::string id;
  auto env = ParseEnvelope(R"({"jsonrpc":"2.0","method":"exit"})", &id);
  ASSERT_TRUE(env.ok());
  EXPECT_FALSE(env->has_id);
}

TEST(JsonRpcTest, Errors) {
  std::string id;
  EXPECT_EQ(ParseEnvelope("{not json", &id).error().code, ErrorCode::kParse);
  EXPECT_EQ(id, "null");
  EXPECT_EQ(ParseEnvelope("[1,2]", &id).error().code, ErrorCode::kInvalidRequest);
  EXPECT_EQ(ParseEnvelope(R"({"jsonrpc":"1.0","id":3,"method":"m"})", &id).error().code,
            ErrorCode::kInvalidRequest);
  EXPECT_EQ(id, "3");  // the id was readable, so the error carries it
  EXPECT_EQ(ParseEnvelope(R"({"jsonrpc":"2.0","id":{},"method":"m"})", &id).error().code,
            ErrorCode::kInvalidRequest);
  EXPECT_EQ(ParseEnvelope(R"({"jsonrpc":"2.0","id":1,"method":5})", &id).error().code,
            ErrorCode::kInvalidRequest);
  EXPECT_EQ(ParseEnvelope(R"({"jsonrpc":"2.0","id":1,"method":"m","params":3})", &id).error().code,
            ErrorCode::kInvalidRequest);
  EXPECT_EQ(ParseEnvelope("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"\xFF\"}", &id).error().code,
            ErrorCode::kParse);  // invalid UTF-8
}

// Lines are parsed in place: strings come out unescaped, and the document keeps the line
// alive wherever the envelope goes.
TEST(JsonRpcTest, InPlaceParsingUnescapesAndOwnsTheLine) {
  std::string id;
  std::string line = R"({"jsonrpc":"2.0","id":"q\"1","method":"files.write","params":{"data":")";
  const std::string big(3 << 20, 'Z');
  line += big + R"(","path":"\/a\u00e9\n"}})";
  Envelope moved;
  {
    auto env = ParseEnvelope(std::move(line), &id);
    ASSERT_TRUE(env.ok());
    moved = std::move(env.value());
  }
  EXPECT_EQ(id, R"("q\"1")");
  const rapidjson::Value& params = *moved.params;
  EXPECT_EQ(std::string(params["path"].GetString(), params["path"].GetStringLength()),
            "/a\xC3\xA9\n");
  EXPECT_EQ(std::string(params["data"].GetString(), params["data"].GetStringLength()), big);
}

// The line is scanned 16 bytes at a time where the CPU allows: strings with escapes,
// numbers of every kind and nesting, at every offset against those blocks, must come out
// as a plain parse of the same text gives them.
TEST(JsonRpcTest, InPlaceParsingMatchesAPlainParseAtEveryOffset) {
  for (size_t pad = 0; pad < 48; ++pad) {
    const std::string text(pad, 's');
    const std::string line = R"({"jsonrpc":"2.0","id":-7,"method":"m","params":{")" + text +
                             R"(":")" + text + R"(\"\\\/\b\f\n\r\t\u00e9\ud83d\ude00)" + text +
                             R"(","n":[0,-1,4294967295,-9223372036854775808,18446744073709551615,1.5e300,)"
                             R"(-0.0,true,false,null,{"":[[]]}],"e":")" + text + R"("}})";
    rapidjson::Document reference;
    reference.Parse(line.data(), line.size());
    ASSERT_FALSE(reference.HasParseError());
    std::string id;
    auto env = ParseEnvelope(line, &id);
    ASSERT_TRUE(env.ok()) << env.error().message;
    EXPECT_EQ(id, "-7");
    EXPECT_TRUE(*env->params == reference["params"]) << pad;
    EXPECT_TRUE(*env->doc == reference) << pad;
  }
}

TEST(JsonRpcTest, InvalidUtf8AnywhereIsAParseError) {
  std::string id;
  EXPECT_EQ(ParseEnvelope("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"m\"}\xC3", &id).error().code,
            ErrorCode::kParse);
  EXPECT_EQ(ParseEnvelope("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"m\xED\xA0\x80\"}", &id)
                .error()
                .code,
            ErrorCode::kParse);
  EXPECT_EQ(ParseEnvelope("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"m\x1A\"}", &id).error().code,
            ErrorCode::kParse);  // a raw control character
  auto ok = ParseEnvelope("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"\xE2\x82\xAC\"}", &id);
  ASSERT_TRUE(ok.ok());
  EXPECT_EQ(ok->method, "\xE2\x82\xAC");
}

TEST(JsonRpcTest, DeepNestingDoesNotCrash) {
  std::string line(1 << 20, '[');
  std::string id;
  EXPECT_EQ(ParseEnvelope(line, &id).error().code, ErrorCode::kParse);
}

TEST(JsonRpcTest, RecoverIdFromAPrefix) {
  EXPECT_EQ(RecoverId(R"({"jsonrpc":"2.0","id":42,"method":"files.write","params":{"data":"xxx)"), "42");
  EXPECT_EQ(RecoverId(R"({"id":"abc","params":)"), "\"abc\"");
  EXPECT_EQ(RecoverId(R"({"params":{"id":5},"id":6)"), "null");  // nested first: not trusted
  EXPECT_EQ(RecoverId(R"({"method":"id","id":9})"), "9");
  EXPECT_EQ(RecoverId("garbage"), "null");
}

TEST(JsonRpcTest, ErrorLineShape) {
  Error e = MakeError(ErrorCode::kNotFound, "no such sandbox");
  e.http_status = 404;
  e.request_id = "r1";
  EXPECT_EQ(ErrorLine("3", e),
            R"({"jsonrpc":"2.0","id":3,"error":{"code":-32004,"message":"no such sandbox","data":{"epp_code":"E8005","http_status":404,"request_id":"r1"}}})");
  EXPECT_EQ(ErrorLine("null", MakeError(ErrorCode::kParse, "bad")),
            R"({"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"bad"}})");
}

}  // namespace
}  // namespace abx::epp
