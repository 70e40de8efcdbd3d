#include "tests/fake-opensandbox/line_framer.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace fake_opensandbox {
namespace {

// Feeds `input` in pieces of `piece` bytes, then finishes.
std::vector<std::string> Frame(const std::string& input, bool keep_blank, size_t piece = 0) {
  LineFramer framer(keep_blank);
  std::vector<std::string> lines;
  auto emit = [&](std::string_view line) { lines.emplace_back(line); };
  if (piece == 0) piece = input.size() + 1;
  for (size_t at = 0; at < input.size(); at += piece) {
    framer.Feed(input.data() + at, std::min(piece, input.size() - at), emit);
  }
  framer.Finish(emit);
  return lines;
}

using Lines = std::vector<std::string>;

TEST(LineFramerTest, BlankLineIsNewlineFrom1017) {
  EXPECT_EQ(Frame("a\n\nb\n", true), (Lines{"a", "\n", "b"}));
}

TEST(LineFramerTest, BlankLinesDroppedUpTo1016) {
  EXPECT_EQ(Frame("a\n\n\nb\n", false), (Lines{"a", "b"}));
}

TEST(LineFramerTest, TerminatorsAreRemovedAndCrLfCountsOnce) {
  EXPECT_EQ(Frame("a\r\nb\rc\n", true), (Lines{"a", "b", "c"}));
  EXPECT_EQ(Frame("a\r\n\r\nb", true), (Lines{"a", "\n", "b"}));
  EXPECT_EQ(Frame("a\r\r\nb", true), (Lines{"a", "\n", "b"}));
}

TEST(LineFramerTest, CrLfSplitAcrossReads) {
  for (size_t piece = 1; piece <= 4; ++piece) {
    EXPECT_EQ(Frame("ab\r\ncd\r\n\r\nef", true, piece), (Lines{"ab", "cd", "\n", "ef"}))
        << "piece " << piece;
    EXPECT_EQ(Frame("ab\r\ncd\r\n\r\nef", false, piece), (Lines{"ab", "cd", "ef"}))
        << "piece " << piece;
  }
}

TEST(LineFramerTest, PartialLineIsHeldUntilExit) {
  LineFramer framer(true);
  std::vector<std::string> lines;
  auto emit = [&](std::string_view line) { lines.emplace_back(line); };
  framer.Feed("par", 3, emit);
  framer.Feed("tial", 4, emit);
  EXPECT_TRUE(lines.empty());
  framer.Finish(emit);
  EXPECT_EQ(lines, (Lines{"partial"}));
}

TEST(LineFramerTest, PrintfAndEchoLookTheSame) {
  EXPECT_EQ(Frame("a", true), (Lines{"a"}));
  EXPECT_EQ(Frame("a\n", true), (Lines{"a"}));
  EXPECT_TRUE(Frame("", true).empty());
}

TEST(LineFramerTest, LongLinesAcrossManyReads) {
  std::string line(100000, 'x');
  EXPECT_EQ(Frame(line + "\n" + line, true, 4096), (Lines{line, line}));
}

}  // namespace
}  // namespace fake_opensandbox
