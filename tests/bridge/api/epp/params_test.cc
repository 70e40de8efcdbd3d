// Reading EPP params (bridge/api/epp/params.h): the helpers the data-carrying methods
// share (files.read and files.write, process.stdin, pty.input).
#include "bridge/api/epp/params.h"

#include <rapidjson/document.h>

#include <gtest/gtest.h>

namespace abx::epp {
namespace {

Result<std::string> EncodingOf(const char* json) {
  rapidjson::Document doc;
  doc.Parse(json);
  return DataEncoding(Params(doc));
}

TEST(ParamsTest, DataIsUtf8UnlessItSaysBase64) {
  EXPECT_EQ(*EncodingOf(R"({})"), "utf8");
  EXPECT_EQ(*EncodingOf(R"({"encoding":"utf8"})"), "utf8");
  EXPECT_EQ(*EncodingOf(R"({"encoding":"base64"})"), "base64");
}

TEST(ParamsTest, AnyOtherEncodingIsRefusedByName) {
  for (const char* json : {R"({"encoding":"latin1"})", R"({"encoding":"BASE64"})", R"({"encoding":""})",
                           R"({"encoding":7})"}) {
    Result<std::string> encoding = EncodingOf(json);
    ASSERT_FALSE(encoding.ok()) << json;
    EXPECT_EQ(encoding.error().code, ErrorCode::kInvalidParams) << json;
    EXPECT_EQ(encoding.error().field, "encoding") << json;
  }
}

TEST(ParamsTest, Base64DataIsDecodedOrRefusedNamingData) {
  EXPECT_EQ(*DecodeBase64Data("aGk="), "hi");
  EXPECT_EQ(*DecodeBase64Data(""), "");
  Result<std::string> bad = DecodeBase64Data("not base64!");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().code, ErrorCode::kInvalidParams);
  EXPECT_EQ(bad.error().field, "data");
}

}  // namespace
}  // namespace abx::epp
