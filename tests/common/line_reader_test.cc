#include "common/line_reader.h"

#include <fcntl.h>
#include <unistd.h>

#include <string>
#include <thread>
#include <vector>

#include "gtest/gtest.h"

namespace abx {
namespace {

// Feeds `input` in chunks of `chunk` bytes, then ends the input.
std::vector<FramedLine> Split(const std::string& input, size_t chunk, size_t max = kMaxLineBytes,
                              size_t prefix = kOversizedPrefixBytes) {
  LineSplitter splitter(max, prefix);
  std::vector<FramedLine> lines;
  for (size_t at = 0; at < input.size(); at += chunk) {
    splitter.Feed(input.data() + at, std::min(chunk, input.size() - at), &lines);
  }
  splitter.Finish(&lines);
  return lines;
}

std::vector<std::string> Texts(const std::vector<FramedLine>& lines) {
  std::vector<std::string> texts;
  for (const FramedLine& line : lines) {
    EXPECT_FALSE(line.oversized);
    EXPECT_EQ(line.length, line.data.size());
    texts.push_back(line.data);
  }
  return texts;
}

TEST(LineSplitterTest, SplitsOnNewlines) {
  EXPECT_EQ(Texts(Split("a\nbc\n{\"x\":1}\n", 1024)),
            (std::vector<std::string>{"a", "bc", "{\"x\":1}"}));
}

TEST(LineSplitterTest, EveryChunkingGivesTheSameLines) {
  const std::string input = "first line\n\nthird\r\nfourth without newline";
  const std::vector<std::string> expected = {"first line", "", "third\r",
                                             "fourth without newline"};
  for (size_t chunk = 1; chunk <= input.size(); ++chunk) {
    EXPECT_EQ(Texts(Split(input, chunk)), expected) << "chunk " << chunk;
  }
}

TEST(LineSplitterTest, KeepsEmptyLines) {
  EXPECT_EQ(Texts(Split("\n\n\n", 2)), (std::vector<std::string>{"", "", ""}));
}

TEST(LineSplitterTest, LeavesCarriageReturnsAlone) {
  EXPECT_EQ(Texts(Split("a\r\n\r\nb\rc\n", 3)),
            (std::vector<std::string>{"a\r", "\r", "b\rc"}));
}

TEST(LineSplitterTest, FinalLineWithoutNewlineCounts) {
  EXPECT_EQ(Texts(Split("x\ny", 1)), (std::vector<std::string>{"x", "y"}));
  EXPECT_EQ(Texts(Split("x\n", 1)), (std::vector<std::string>{"x"}));
  EXPECT_TRUE(Split("", 1).empty());
}

TEST(LineSplitterTest, KeepsBinaryBytes) {
  const std::string input("a\0b\xff\n\0\n", 7);
  EXPECT_EQ(Texts(Split(input, 2)),
            (std::vector<std::string>{std::string("a\0b\xff", 4), std::string("\0", 1)}));
}

TEST(LineSplitterTest, LineAtTheLimitIsALine) {
  const std::string line(kMaxLineBytes, 'a');
  std::vector<FramedLine> lines = Split(line + "\nnext\n", 65536);
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_FALSE(lines[0].oversized);
  EXPECT_EQ(lines[0].data.size(), kMaxLineBytes);
  EXPECT_EQ(lines[0].data, line);
  EXPECT_EQ(lines[1].data, "next");
}

TEST(LineSplitterTest, LineOneByteOverTheLimitIsDropped) {
  std::string line(kMaxLineBytes + 1, 'b');
  line.replace(0, 12, "{\"id\":42,\"x\"");
  std::vector<FramedLine> lines = Split(line + "\nnext\n", 65536);
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_TRUE(lines[0].oversized);
  EXPECT_EQ(lines[0].length, kMaxLineBytes + 1);
  EXPECT_EQ(lines[0].data, line.substr(0, kOversizedPrefixBytes));
  EXPECT_FALSE(lines[1].oversized);
  EXPECT_EQ(lines[1].data, "next");
}

TEST(LineSplitterTest, OversizedLineAtEndOfInputIsReported) {
  std::vector<FramedLine> lines = Split(std::string(kMaxLineBytes + 5, 'c'), 1 << 20);
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_TRUE(lines[0].oversized);
  EXPECT_EQ(lines[0].length, kMaxLineBytes + 5);
  EXPECT_EQ(lines[0].data.size(), kOversizedPrefixBytes);
}

TEST(LineSplitterTest, OversizedLinePrefixSurvivesAnyChunking) {
  // Small limits make every split point reachable.
  const std::string input = "0123456789abcdef\nok\n";
  for (size_t chunk = 1; chunk <= input.size(); ++chunk) {
    std::vector<FramedLine> lines = Split(input, chunk, /*max=*/8, /*prefix=*/5);
    ASSERT_EQ(lines.size(), 2u) << "chunk " << chunk;
    EXPECT_TRUE(lines[0].oversized);
    EXPECT_EQ(lines[0].data, "01234") << "chunk " << chunk;
    EXPECT_EQ(lines[0].length, 16u);
    EXPECT_FALSE(lines[1].oversized);
    EXPECT_EQ(lines[1].data, "ok");
  }
}

TEST(LineSplitterTest, OversizedLineIsNotBufferedWhole) {
  LineSplitter splitter;
  std::vector<FramedLine> lines;
  const std::string chunk(1 << 20, 'd');
  for (int i = 0; i < 64; ++i) splitter.Feed(chunk.data(), chunk.size(), &lines);  // 64 MiB
  splitter.Feed("\n", 1, &lines);
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_TRUE(lines[0].oversized);
  EXPECT_EQ(lines[0].length, 64u << 20);
  EXPECT_EQ(lines[0].data.size(), kOversizedPrefixBytes);
  EXPECT_LE(lines[0].data.capacity(), kOversizedPrefixBytes * 2);
}

TEST(LineSplitterTest, SplitterIsReusableAfterFinish) {
  LineSplitter splitter;
  std::vector<FramedLine> lines;
  splitter.Feed("a", 1, &lines);
  splitter.Finish(&lines);
  splitter.Feed("b\n", 2, &lines);
  splitter.Finish(&lines);
  EXPECT_EQ(Texts(lines), (std::vector<std::string>{"a", "b"}));
}

// LineReader over a pipe, with a writer that dribbles bytes so lines straddle reads.
TEST(LineReaderTest, ReadsLinesSplitAcrossReads) {
  int fds[2];
  ASSERT_EQ(pipe(fds), 0);
  const std::string input = std::string("{\"id\":1}\n") + std::string(200000, 'x') + "\n\nend";
  std::thread writer([&] {
    for (size_t at = 0; at < input.size();) {
      size_t n = std::min<size_t>(7 + at % 13, input.size() - at);
      ssize_t wrote = write(fds[1], input.data() + at, n);
      if (wrote <= 0) break;
      at += static_cast<size_t>(wrote);
    }
    close(fds[1]);
  });
  LineReader reader(fds[0], kMaxLineBytes, kOversizedPrefixBytes, /*read_size=*/4096);
  std::vector<std::string> got;
  FramedLine line;
  while (reader.Next(&line)) {
    EXPECT_FALSE(line.oversized);
    got.push_back(line.data);
  }
  writer.join();
  close(fds[0]);
  EXPECT_TRUE(reader.error().empty());
  EXPECT_EQ(got, (std::vector<std::string>{"{\"id\":1}", std::string(200000, 'x'), "", "end"}));
  EXPECT_FALSE(reader.Next(&line));  // stays at end
}

TEST(LineReaderTest, ReportsOversizedLineFromDescriptorAndContinues) {
  char path[] = "/tmp/line_reader_test_XXXXXX";
  int fd = mkstemp(path);
  ASSERT_GE(fd, 0);
  unlink(path);
  const std::string big(kMaxLineBytes + 1, 'z');
  const std::string input = "a\n" + big + "\nb\n";
  ASSERT_EQ(write(fd, input.data(), input.size()), static_cast<ssize_t>(input.size()));
  ASSERT_EQ(lseek(fd, 0, SEEK_SET), 0);
  LineReader reader(fd);
  FramedLine line;
  ASSERT_TRUE(reader.Next(&line));
  EXPECT_EQ(line.data, "a");
  ASSERT_TRUE(reader.Next(&line));
  EXPECT_TRUE(line.oversized);
  EXPECT_EQ(line.length, kMaxLineBytes + 1);
  ASSERT_TRUE(reader.Next(&line));
  EXPECT_FALSE(line.oversized);
  EXPECT_EQ(line.data, "b");
  EXPECT_FALSE(reader.Next(&line));
  close(fd);
}

TEST(LineReaderTest, ReadErrorEndsInputWithMessage) {
  LineReader reader(-1);
  FramedLine line;
  EXPECT_FALSE(reader.Next(&line));
  EXPECT_NE(reader.error().find("read:"), std::string::npos);
}

}  // namespace
}  // namespace abx
