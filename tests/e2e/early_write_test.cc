// files.write whose upload starts while the host still writes the line
// (bridge/api/epp/early_write.h), end to end through the real shim and bridge: the file is
// right whichever way the write went, the early upload is used when the line's first bytes
// name the whole request, and a line that turns out otherwise writes nothing by it.
// The bridge's `status` counts early writes used and dropped.

#include <cstdint>
#include <regex>
#include <string>
#include <thread>

#include <gtest/gtest.h>

#include "tests/e2e/base64_encode.h"
#include "tests/e2e/files_fixture.h"
#include "tests/e2e/process.h"
#include "tests/e2e/runfiles.h"

namespace abx::e2e {
namespace {

std::string RandomBytes(size_t size, uint32_t seed) {
  std::string bytes(size, '\0');
  uint32_t x = seed;
  for (char& c : bytes) {
    x ^= x << 13;
    x ^= x >> 17;
    x ^= x << 5;
    c = static_cast<char>(x >> 24);
  }
  return bytes;
}

struct EarlyWrites {
  int64_t used = -1;
  int64_t dropped = -1;
};

class EarlyWriteTest : public FilesFixture {
 protected:
  EarlyWriteTest() : FilesFixture(kDir) {}

  // A files.write line with sandbox_id and path first, then `before` (members ending in
  // a comma), the data, then `after` (members starting with a comma).
  std::string WriteLine(int64_t id, const std::string& path, const std::string& data,
                        const std::string& before, const std::string& after = "") {
    return "{\"jsonrpc\":\"2.0\",\"id\":" + std::to_string(id) +
           ",\"method\":\"files.write\",\"params\":{\"sandbox_id\":\"" + sandbox_ +
           "\",\"path\":\"" + path + "\"," + before + "\"data\":\"" + data + "\"" + after + "}}";
  }

  // The bridge's counters, from `abx-opensandbox-bridge status`.
  EarlyWrites Counted() {
    std::string output;
    RunCommand({BridgeBinary(), "status", "--socket", socket_path()}, ShimEnv(), Millis(5000),
               &output);
    EarlyWrites counted;
    std::smatch match;
    if (std::regex_search(output, match, std::regex("\"early_writes_used\":(\\d+)"))) {
      counted.used = std::stoll(match[1]);
    }
    if (std::regex_search(output, match, std::regex("\"early_writes_dropped\":(\\d+)"))) {
      counted.dropped = std::stoll(match[1]);
    }
    EXPECT_GE(counted.used, 0) << output;
    return counted;
  }

  // The file's bytes in base64, read back in pieces of 3 MiB (whose base64 texts join
  // into the whole's); "<missing>" for E8005.
  std::string ReadBack(const std::string& path) {
    constexpr int64_t kPiece = 3 << 20;
    std::string text;
    for (int64_t offset = 0;; offset += kPiece) {
      MessagePtr read = Call("files.read", JsonObject()
                                               .Str("path", path)
                                               .Str("encoding", "base64")
                                               .Int("offset", offset)
                                               .Int("length", kPiece));
      if (!read) return "<no answer>";
      if (read->EppCode() == "E8005") return "<missing>";
      if (read->IsError()) return "<error " + read->raw.substr(0, 300) + ">";
      text += GetString(read->result(), "data");
      if (GetBool(read->result(), "eof", true)) return text;
    }
  }

  static constexpr char kDir[] = "/tmp/e2e-early";
};

TEST_F(EarlyWriteTest, UploadStartsWhileTheLineArrivesAndWritesTheFile) {
  const std::string bytes = RandomBytes(5u << 20, 11);
  const std::string path = std::string(kDir) + "/early.bin";
  const EarlyWrites before = Counted();
  ASSERT_TRUE(shim_->Send(WriteLine(1000001, path, Base64(bytes), "\"encoding\":\"base64\",")));
  MessagePtr written = shim_->WaitResponse(1000001, Millis(20000));
  ASSERT_NE(written, nullptr);
  ASSERT_FALSE(written->IsError()) << written->raw;
  EXPECT_EQ(GetInt(written->result(), "size", -1), static_cast<int64_t>(bytes.size()));
  const EarlyWrites after = Counted();
  EXPECT_EQ(after.used - before.used, 1);
  EXPECT_EQ(after.dropped - before.dropped, 0);
  EXPECT_TRUE(ReadBack(path) == Base64(bytes)) << "the file differs from what was written";
}

// The host writes the first half of the line, waits, then the rest: the upload has begun
// and waits for the bytes it has not seen; what arrives later still goes in.
TEST_F(EarlyWriteTest, ALineWrittenInTwoGoesWithAPauseBetween) {
  const std::string bytes = RandomBytes(3u << 20, 12);
  const std::string path = std::string(kDir) + "/paused.bin";
  const std::string line =
      WriteLine(1000002, path, Base64(bytes), "\"encoding\":\"base64\",") + "\n";
  const EarlyWrites before = Counted();
  ASSERT_TRUE(shim_->SendRaw(line.substr(0, line.size() / 2)));
  std::this_thread::sleep_for(Millis(300));
  ASSERT_TRUE(shim_->SendRaw(line.substr(line.size() / 2)));
  MessagePtr written = shim_->WaitResponse(1000002, Millis(20000));
  ASSERT_NE(written, nullptr);
  ASSERT_FALSE(written->IsError()) << written->raw;
  EXPECT_EQ(Counted().used - before.used, 1);
  EXPECT_TRUE(ReadBack(path) == Base64(bytes)) << "the file differs from what was written";
}

TEST_F(EarlyWriteTest, AppendOntoAFileThatExists) {
  const std::string path = std::string(kDir) + "/log.bin";
  MessagePtr first = Call("files.write", JsonObject().Str("path", path).Str("data", "head\n"));
  ASSERT_NE(first, nullptr);
  ASSERT_FALSE(first->IsError()) << first->raw;
  const std::string bytes = RandomBytes(3u << 20, 13);
  const EarlyWrites before = Counted();
  ASSERT_TRUE(shim_->Send(WriteLine(1000003, path, Base64(bytes),
                                    "\"encoding\":\"base64\",\"append\":true,\"mode\":\"0600\",")));
  MessagePtr written = shim_->WaitResponse(1000003, Millis(20000));
  ASSERT_NE(written, nullptr);
  ASSERT_FALSE(written->IsError()) << written->raw;
  EXPECT_EQ(GetInt(written->result(), "size", -1), static_cast<int64_t>(bytes.size() + 5));
  EXPECT_EQ(Counted().used - before.used, 1);
  EXPECT_TRUE(ReadBack(path) == Base64("head\n" + bytes)) << "the file differs from what was written";
  MessagePtr stat = Call("files.stat", JsonObject().Str("path", path));
  ASSERT_NE(stat, nullptr);
  EXPECT_EQ(GetString(stat->result(), "mode"), "0600") << stat->raw;
  MessagePtr listed = Call("files.list", JsonObject().Str("path", kDir));
  ASSERT_NE(listed, nullptr);
  EXPECT_EQ(listed->raw.find(".abx-append-"), std::string::npos) << listed->raw;
}

// `append` after the data: the upload went to the file itself as the first bytes implied,
// but the request is an append. That upload is dropped; the append happens the ordinary way.
TEST_F(EarlyWriteTest, AMemberAfterTheDataThatChangesTheRequestGoesTheOrdinaryWay) {
  const std::string path = std::string(kDir) + "/late-append.bin";
  MessagePtr first = Call("files.write", JsonObject().Str("path", path).Str("data", "head\n"));
  ASSERT_NE(first, nullptr);
  const std::string bytes = RandomBytes(3u << 20, 14);
  const EarlyWrites before = Counted();
  ASSERT_TRUE(shim_->Send(
      WriteLine(1000004, path, Base64(bytes), "\"encoding\":\"base64\",", ",\"append\":true")));
  MessagePtr written = shim_->WaitResponse(1000004, Millis(20000));
  ASSERT_NE(written, nullptr);
  ASSERT_FALSE(written->IsError()) << written->raw;
  const EarlyWrites after = Counted();
  EXPECT_EQ(after.used - before.used, 0);
  EXPECT_EQ(after.dropped - before.dropped, 1);
  EXPECT_TRUE(ReadBack(path) == Base64("head\n" + bytes)) << "the file differs from what was written";
}

// Without "encoding":"base64" before the data there is nothing to decode early (utf8, the
// default, is JSON text): the line goes the ordinary way, with no early upload at all.
TEST_F(EarlyWriteTest, TextDataGoesTheOrdinaryWay) {
  const std::string text = Base64(RandomBytes(3u << 20, 19));  // plain ASCII text
  const std::string path = std::string(kDir) + "/text.txt";
  const EarlyWrites before = Counted();
  ASSERT_TRUE(shim_->Send(WriteLine(1000009, path, text, "")));
  MessagePtr written = shim_->WaitResponse(1000009, Millis(20000));
  ASSERT_NE(written, nullptr);
  ASSERT_FALSE(written->IsError()) << written->raw;
  EXPECT_EQ(GetInt(written->result(), "size", -1), static_cast<int64_t>(text.size()));
  const EarlyWrites after = Counted();
  EXPECT_EQ(after.used - before.used, 0);
  EXPECT_EQ(after.dropped - before.dropped, 0);
  EXPECT_TRUE(ReadBack(path) == Base64(text)) << "the file differs from what was written";
}

// The line began as a files.write and ends as no JSON at all: a parse error, and the
// upload that had begun writes nothing.
TEST_F(EarlyWriteTest, ALineThatEndsBrokenWritesNothing) {
  const std::string path = std::string(kDir) + "/broken.bin";
  const EarlyWrites before = Counted();
  ASSERT_TRUE(shim_->Send(
      WriteLine(1000005, path, Base64(RandomBytes(3u << 20, 15)), "\"encoding\":\"base64\",") +
      "garbage"));
  MessagePtr answer = shim_->WaitResponseForIdJson("null", Millis(20000));
  ASSERT_NE(answer, nullptr);
  EXPECT_EQ(answer->ErrorCode(), -32700) << answer->raw;
  EXPECT_EQ(ReadBack(path), "<missing>");
  const EarlyWrites after = Counted();
  EXPECT_EQ(after.used - before.used, 0);
  EXPECT_EQ(after.dropped - before.dropped, 1);
}

// A character outside base64 deep in the data: invalid params, as without an early
// upload, and nothing written.
TEST_F(EarlyWriteTest, BadBase64MidwayIsInvalidParamsAndWritesNothing) {
  const std::string path = std::string(kDir) + "/bad.bin";
  std::string data = Base64(RandomBytes(3u << 20, 16));
  data[data.size() / 2] = '!';
  const EarlyWrites before = Counted();
  ASSERT_TRUE(shim_->Send(WriteLine(1000006, path, data, "\"encoding\":\"base64\",")));
  MessagePtr answer = shim_->WaitResponse(1000006, Millis(20000));
  ASSERT_NE(answer, nullptr);
  EXPECT_EQ(answer->ErrorCode(), -32602) << answer->raw;
  EXPECT_EQ(ReadBack(path), "<missing>");
  EXPECT_EQ(Counted().dropped - before.dropped, 1);
}

// JSON may escape '/' as "\/": the file still gets the bytes the unescaped text encodes.
TEST_F(EarlyWriteTest, EscapedSlashesInTheDataStillWriteTheRightBytes) {
  const std::string bytes = RandomBytes(3u << 20, 17);
  const std::string path = std::string(kDir) + "/escaped.bin";
  std::string escaped;
  for (char c : Base64(bytes)) {
    if (c == '/') escaped += '\\';
    escaped += c;
  }
  ASSERT_TRUE(shim_->Send(WriteLine(1000007, path, escaped, "\"encoding\":\"base64\",")));
  MessagePtr written = shim_->WaitResponse(1000007, Millis(20000));
  ASSERT_NE(written, nullptr);
  ASSERT_FALSE(written->IsError()) << written->raw;
  EXPECT_TRUE(ReadBack(path) == Base64(bytes)) << "the file differs from what was written";
}

// The host goes away in the middle of the line: the upload that had begun writes nothing.
TEST_F(EarlyWriteTest, AHostGoneMidLineWritesNothing) {
  const std::string path = std::string(kDir) + "/cut.bin";
  const std::string line =
      WriteLine(1000008, path, Base64(RandomBytes(3u << 20, 18)), "\"encoding\":\"base64\",");
  const EarlyWrites before = Counted();
  ASSERT_TRUE(shim_->SendRaw(line.substr(0, line.size() / 2)));
  std::this_thread::sleep_for(Millis(300));
  shim_->CloseStdin();
  ASSERT_TRUE(shim_->WaitExit(Millis(10000)).has_value());
  EarlyWrites after = Counted();
  for (int i = 0; i < 100 && after.dropped - before.dropped < 1; ++i) {
    std::this_thread::sleep_for(Millis(50));
    after = Counted();
  }
  EXPECT_EQ(after.dropped - before.dropped, 1);
  EXPECT_EQ(after.used - before.used, 0);
  shim_ = StartInitializedShim();
  ASSERT_NE(shim_, nullptr);
  EXPECT_EQ(ReadBack(path), "<missing>");
}

}  // namespace
}  // namespace abx::e2e
