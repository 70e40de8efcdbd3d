#include "bridge/api/epp/write_prefix.h"

#include <string>

#include "gtest/gtest.h"

namespace abx::epp {
namespace {

const std::string kData = "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8g";

TEST(WritePrefixTest, ReadsTheMembersBeforeData) {
  const std::string line =
      "{\"jsonrpc\":\"2.0\",\"id\":17,\"method\":\"files.write\",\"params\":{\"sandbox_id\":\"sb-1\","
      "\"path\":\"/tmp/a b.bin\",\"encoding\":\"base64\",\"append\":true,\"mode\":\"0640\","
      "\"data\":\"" + kData;
  auto prefix = ReadWritePrefix(line);
  ASSERT_TRUE(prefix.has_value());
  EXPECT_EQ(prefix->sandbox_id, "sb-1");
  EXPECT_EQ(prefix->path, "/tmp/a b.bin");
  EXPECT_EQ(prefix->encoding, std::optional<std::string>("base64"));
  EXPECT_EQ(prefix->append, std::optional<bool>(true));
  EXPECT_EQ(prefix->mode, std::optional<std::string>("0640"));
  EXPECT_EQ(line.substr(prefix->data_begin), kData);
}

TEST(WritePrefixTest, MembersInAnyOrderWithBlanksAndOthersBetween) {
  const std::string line =
      " { \"method\" : \"files.write\" , \"id\" : \"x\" , \"jsonrpc\":\"2.0\", \"params\" : { "
      "\"path\" : \"/p\" , \"future\" : null, \"n\": -1.5e3, \"sandbox_id\" : \"s\" , \"data\" : \"" +
      kData;
  auto prefix = ReadWritePrefix(line);
  ASSERT_TRUE(prefix.has_value());
  EXPECT_EQ(prefix->sandbox_id, "s");
  EXPECT_EQ(prefix->path, "/p");
  EXPECT_FALSE(prefix->encoding.has_value());
  EXPECT_FALSE(prefix->append.has_value());
  EXPECT_FALSE(prefix->mode.has_value());
  EXPECT_EQ(line.substr(prefix->data_begin), kData);
}

// Strings are read as JSON reads them (escapes undone), and other members may be any
// JSON, nested or not: the handler's own parse sees the same.
TEST(WritePrefixTest, EscapesAndNestedMembersBeforeData) {
  const std::string line =
      "{\"jsonrpc\":\"2.0\",\"meta\":{\"a\":[1,{\"data\":2}]},\"method\":\"files.write\",\"params\":{"
      "\"x\":[{\"path\":7}],\"sandbox_id\":\"s\\u0031\",\"path\":\"/a\\\"b\\/c\",\"data\":\"" + kData;
  auto prefix = ReadWritePrefix(line);
  ASSERT_TRUE(prefix.has_value());
  EXPECT_EQ(prefix->sandbox_id, "s1");
  EXPECT_EQ(prefix->path, "/a\"b/c");
  EXPECT_EQ(line.substr(prefix->data_begin), kData);
}

TEST(WritePrefixTest, RefusesWhatItCannotBeSureOf) {
  const std::string head = "{\"jsonrpc\":\"2.0\",\"id\":1,";
  const std::string params_ok = "\"params\":{\"sandbox_id\":\"s\",\"path\":\"/p\",\"data\":\"" + kData;
  // The baseline: recognized.
  ASSERT_TRUE(ReadWritePrefix(head + "\"method\":\"files.write\"," + params_ok).has_value());
  const std::string cases[] = {
      // another method, or the method only after params
      head + "\"method\":\"files.read\"," + params_ok,
      head + params_ok,
      // sandbox_id or path missing before data, or not strings
      head + "\"method\":\"files.write\",\"params\":{\"path\":\"/p\",\"data\":\"" + kData,
      head + "\"method\":\"files.write\",\"params\":{\"sandbox_id\":\"s\",\"data\":\"" + kData,
      head + "\"method\":\"files.write\",\"params\":{\"sandbox_id\":7,\"path\":\"/p\",\"data\":\"" + kData,
      // a data key only inside another member
      head + "\"method\":\"files.write\",\"params\":{\"sandbox_id\":\"s\",\"path\":\"/p\",\"x\":{\"data\":\"" + kData,
      // params ended before any data
      head + "\"method\":\"files.write\",\"params\":{\"sandbox_id\":\"s\",\"path\":\"/p\"},\"data\":\"" + kData,
      // append or mode of a type the handler refuses
      head + "\"method\":\"files.write\",\"params\":{\"sandbox_id\":\"s\",\"path\":\"/p\",\"append\":1,\"data\":\"" + kData,
      head + "\"method\":\"files.write\",\"params\":{\"sandbox_id\":\"s\",\"path\":\"/p\",\"append\":\"true\",\"data\":\"" + kData,
      head + "\"method\":\"files.write\",\"params\":{\"sandbox_id\":\"s\",\"path\":\"/p\",\"mode\":644,\"data\":\"" + kData,
      // data not a string
      head + "\"method\":\"files.write\",\"params\":{\"sandbox_id\":\"s\",\"path\":\"/p\",\"data\":null}}",
      // not an object, or broken
      "[" + head,
      head + "\"method\":\"files.write\" \"params\":{}",
  };
  for (const std::string& line : cases) EXPECT_FALSE(ReadWritePrefix(line).has_value()) << line;
}

TEST(WritePrefixTest, APrefixCutAnywhereBeforeDataIsNotRead) {
  const std::string line =
      "{\"jsonrpc\":\"2.0\",\"id\":12345,\"method\":\"files.write\",\"params\":{\"sandbox_id\":\"s\","
      "\"path\":\"/p\",\"append\":false,\"data\":\"";
  for (size_t cut = 0; cut < line.size(); ++cut) {
    EXPECT_FALSE(ReadWritePrefix(line.substr(0, cut)).has_value()) << line.substr(0, cut);
  }
  auto whole = ReadWritePrefix(line);
  ASSERT_TRUE(whole.has_value());
  EXPECT_EQ(whole->data_begin, line.size());
}

}  // namespace
}  // namespace abx::epp
