// files.rw end to end (docs/epp1.md §3): write, read (whole, ranged, base64), stat, list,
// move, remove, and E8005 for a missing path.

#include <algorithm>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "tests/e2e/base64_encode.h"
#include "tests/e2e/files_fixture.h"

namespace abx::e2e {
namespace {

class FilesTest : public FilesFixture {
 protected:
  FilesTest() : FilesFixture(kDir) {}
  static constexpr char kDir[] = "/tmp/e2e-files";
};

TEST_F(FilesTest, WriteReadStatListRemove) {
  const std::string path = std::string(kDir) + "/hello.txt";
  const std::string content = "hello\nworld\n";
  MessagePtr written =
      Call("files.write", JsonObject().Str("path", path).Str("data", content).Str("mode", "0640"));
  ASSERT_NE(written, nullptr);
  ASSERT_FALSE(written->IsError()) << written->raw;
  EXPECT_EQ(GetString(written->result(), "path"), path) << written->raw;
  EXPECT_EQ(GetInt(written->result(), "size", -1), 12) << written->raw;

  MessagePtr read = Call("files.read", JsonObject().Str("path", path));
  ASSERT_NE(read, nullptr);
  ASSERT_FALSE(read->IsError()) << read->raw;
  EXPECT_EQ(GetString(read->result(), "data"), content) << read->raw;
  EXPECT_EQ(GetString(read->result(), "encoding"), "utf8") << read->raw;
  EXPECT_EQ(GetInt(read->result(), "offset", -1), 0) << read->raw;
  EXPECT_EQ(GetInt(read->result(), "size", -1), 12) << read->raw;
  EXPECT_TRUE(GetBool(read->result(), "eof", false)) << read->raw;

  MessagePtr stat = Call("files.stat", JsonObject().Str("path", path));
  ASSERT_NE(stat, nullptr);
  ASSERT_FALSE(stat->IsError()) << stat->raw;
  EXPECT_EQ(GetString(stat->result(), "path"), path) << stat->raw;
  EXPECT_EQ(GetString(stat->result(), "name"), "hello.txt") << stat->raw;
  EXPECT_EQ(GetString(stat->result(), "type"), "file") << stat->raw;
  EXPECT_EQ(GetInt(stat->result(), "size", -1), 12) << stat->raw;
  EXPECT_EQ(GetString(stat->result(), "mode"), "0640") << stat->raw;
  EXPECT_FALSE(GetString(stat->result(), "modified_at").empty()) << stat->raw;

  MessagePtr listed = Call("files.list", JsonObject().Str("path", kDir));
  ASSERT_NE(listed, nullptr);
  ASSERT_FALSE(listed->IsError()) << listed->raw;
  const rapidjson::Value* entries = Find(listed->result(), "entries");
  ASSERT_TRUE(entries && entries->IsArray()) << listed->raw;
  bool found = false;
  for (const rapidjson::Value& entry : entries->GetArray()) {
    found |= GetString(entry, "name") == "hello.txt" && GetString(entry, "type") == "file";
  }
  EXPECT_TRUE(found) << listed->raw;

  MessagePtr removed = Call("files.remove", JsonObject().Str("path", path));
  ASSERT_NE(removed, nullptr);
  ASSERT_FALSE(removed->IsError()) << removed->raw;
  EXPECT_EQ(ToJson(removed->result()), "{}") << removed->raw;

  MessagePtr gone = Call("files.stat", JsonObject().Str("path", path));
  ASSERT_NE(gone, nullptr);
  EXPECT_EQ(gone->ErrorCode(), -32004) << gone->raw;
  EXPECT_EQ(gone->EppCode(), "E8005") << gone->raw;
}

TEST_F(FilesTest, RangedRead) {
  const std::string path = std::string(kDir) + "/range.txt";
  MessagePtr written = Call("files.write", JsonObject().Str("path", path).Str("data", "hello\nworld\n"));
  ASSERT_NE(written, nullptr);
  ASSERT_FALSE(written->IsError()) << written->raw;

  MessagePtr read = Call("files.read", JsonObject().Str("path", path).Int("offset", 6).Int("length", 5));
  ASSERT_NE(read, nullptr);
  ASSERT_FALSE(read->IsError()) << read->raw;
  EXPECT_EQ(GetString(read->result(), "data"), "world") << read->raw;
  EXPECT_EQ(GetInt(read->result(), "offset", -1), 6) << read->raw;
  EXPECT_EQ(GetInt(read->result(), "size", -1), 12) << read->raw;
  EXPECT_FALSE(GetBool(read->result(), "eof", true)) << read->raw;
}

TEST_F(FilesTest, BinaryRoundTripsWithBase64) {
  std::string bytes;
  for (int i = 0; i < 256; ++i) bytes.push_back(static_cast<char>(i));
  bytes += bytes;  // 512 bytes, every value twice, NULs and invalid UTF-8 included
  const std::string path = std::string(kDir) + "/blob.bin";
  MessagePtr written = Call("files.write", JsonObject()
                                               .Str("path", path)
                                               .Str("data", Base64(bytes))
                                               .Str("encoding", "base64"));
  ASSERT_NE(written, nullptr);
  ASSERT_FALSE(written->IsError()) << written->raw;
  EXPECT_EQ(GetInt(written->result(), "size", -1), 512) << written->raw;

  MessagePtr read = Call("files.read", JsonObject().Str("path", path).Str("encoding", "base64"));
  ASSERT_NE(read, nullptr);
  ASSERT_FALSE(read->IsError()) << read->raw;
  EXPECT_EQ(GetString(read->result(), "encoding"), "base64") << read->raw;
  EXPECT_EQ(GetString(read->result(), "data"), Base64(bytes)) << read->raw;
  EXPECT_EQ(GetInt(read->result(), "size", -1), 512) << read->raw;
}

// A write of 5 MiB is a 6.7 MiB line: the shim sends it to the bridge in parts while it
// reads it (1 MiB each, SessionInput.line_part), and the bridge puts it back together.
TEST_F(FilesTest, MultiMegabyteWriteArrivesWholeAndReadsBackExact) {
  std::string bytes(5u << 20, '\0');
  uint32_t x = 2463534242u;
  for (char& c : bytes) {
    x ^= x << 13;
    x ^= x >> 17;
    x ^= x << 5;
    c = static_cast<char>(x >> 24);
  }
  const std::string path = std::string(kDir) + "/large.bin";
  MessagePtr written = Call("files.write", JsonObject()
                                               .Str("path", path)
                                               .Str("data", Base64(bytes))
                                               .Str("encoding", "base64"));
  ASSERT_NE(written, nullptr);
  ASSERT_FALSE(written->IsError()) << written->raw.substr(0, 2000);
  EXPECT_EQ(GetInt(written->result(), "size", -1), static_cast<int64_t>(bytes.size()));

  const int64_t half = static_cast<int64_t>(bytes.size() / 2);
  for (int64_t offset : {int64_t{0}, half}) {
    MessagePtr read = Call("files.read", JsonObject()
                                             .Str("path", path)
                                             .Str("encoding", "base64")
                                             .Int("offset", offset)
                                             .Int("length", half));
    ASSERT_NE(read, nullptr);
    ASSERT_FALSE(read->IsError()) << read->raw.substr(0, 2000);
    EXPECT_TRUE(GetString(read->result(), "data") ==
                Base64(bytes.substr(static_cast<size_t>(offset), static_cast<size_t>(half))))
        << "bytes from " << offset << " differ";
  }
}

TEST_F(FilesTest, MoveThenReadAtTheNewPath) {
  const std::string from = std::string(kDir) + "/from.txt";
  const std::string to = std::string(kDir) + "/to.txt";
  MessagePtr written = Call("files.write", JsonObject().Str("path", from).Str("data", "moved\n"));
  ASSERT_NE(written, nullptr);
  ASSERT_FALSE(written->IsError()) << written->raw;
  MessagePtr moved = Call("files.move", JsonObject().Str("from", from).Str("to", to));
  ASSERT_NE(moved, nullptr);
  ASSERT_FALSE(moved->IsError()) << moved->raw;
  MessagePtr read = Call("files.read", JsonObject().Str("path", to));
  ASSERT_NE(read, nullptr);
  EXPECT_EQ(GetString(read->result(), "data"), "moved\n") << read->raw;
  MessagePtr old = Call("files.stat", JsonObject().Str("path", from));
  ASSERT_NE(old, nullptr);
  EXPECT_EQ(old->EppCode(), "E8005") << old->raw;
}

// append: the bytes go after what is there (binary included), the file keeps its mode
// unless one is given, a missing file is created, and nothing else is left behind.
TEST_F(FilesTest, AppendAddsBytesKeepsModeAndLeavesNoPartFiles) {
  const std::string dir = std::string(kDir) + "/append";
  MessagePtr made = Call("files.mkdir", JsonObject().Str("path", dir).Bool("parents", true));
  ASSERT_NE(made, nullptr);
  const std::string path = dir + "/log.bin";
  MessagePtr first = Call("files.write", JsonObject().Str("path", path).Str("data", "one\n").Str("mode", "0640"));
  ASSERT_NE(first, nullptr);
  ASSERT_FALSE(first->IsError()) << first->raw;
  const std::string binary("\x00\xff\n'$x\"", 7);
  MessagePtr second = Call("files.write", JsonObject()
                                              .Str("path", path)
                                              .Str("data", Base64(binary))
                                              .Str("encoding", "base64")
                                              .Bool("append", true));
  ASSERT_NE(second, nullptr);
  ASSERT_FALSE(second->IsError()) << second->raw;
  EXPECT_EQ(GetInt(second->result(), "size", -1), 11) << second->raw;

  MessagePtr read = Call("files.read", JsonObject().Str("path", path).Str("encoding", "base64"));
  ASSERT_NE(read, nullptr);
  EXPECT_EQ(GetString(read->result(), "data"), Base64("one\n" + binary)) << read->raw;
  MessagePtr stat = Call("files.stat", JsonObject().Str("path", path));
  ASSERT_NE(stat, nullptr);
  EXPECT_EQ(GetString(stat->result(), "mode"), "0640") << stat->raw;

  MessagePtr third = Call("files.write",
                          JsonObject().Str("path", path).Str("data", "two\n").Str("mode", "0600").Bool("append", true));
  ASSERT_NE(third, nullptr);
  ASSERT_FALSE(third->IsError()) << third->raw;
  EXPECT_EQ(GetInt(third->result(), "size", -1), 15) << third->raw;
  stat = Call("files.stat", JsonObject().Str("path", path));
  ASSERT_NE(stat, nullptr);
  EXPECT_EQ(GetString(stat->result(), "mode"), "0600") << stat->raw;
  EXPECT_EQ(GetInt(stat->result(), "size", -1), 15) << stat->raw;

  const std::string fresh = dir + "/fresh.txt";
  MessagePtr created = Call("files.write", JsonObject().Str("path", fresh).Str("data", "new\n").Bool("append", true));
  ASSERT_NE(created, nullptr);
  ASSERT_FALSE(created->IsError()) << created->raw;
  EXPECT_EQ(GetInt(created->result(), "size", -1), 4) << created->raw;

  MessagePtr listed = Call("files.list", JsonObject().Str("path", dir));
  ASSERT_NE(listed, nullptr);
  const rapidjson::Value* entries = Find(listed->result(), "entries");
  ASSERT_TRUE(entries && entries->IsArray()) << listed->raw;
  std::vector<std::string> names;
  for (const rapidjson::Value& entry : entries->GetArray()) names.push_back(GetString(entry, "name"));
  std::sort(names.begin(), names.end());
  EXPECT_EQ(names, (std::vector<std::string>{"fresh.txt", "log.bin"})) << listed->raw;
}

TEST_F(FilesTest, ReadOfMissingPathIsE8005) {
  MessagePtr read = Call("files.read", JsonObject().Str("path", std::string(kDir) + "/absent"));
  ASSERT_NE(read, nullptr);
  ASSERT_TRUE(read->IsError()) << read->raw;
  EXPECT_EQ(read->ErrorCode(), -32004) << read->raw;
  EXPECT_EQ(read->EppCode(), "E8005") << read->raw;
}

}  // namespace
}  // namespace abx::e2e
