// Where a reattached terminal's redraw starts (bridge/daemon/terminal_redraw.h): at the last
// full-screen clear, or within the last 64 KiB at a line's start, whichever is later.

#include <string>

#include <gtest/gtest.h>

#include "bridge/daemon/terminal_redraw.h"

namespace abx::daemon {
namespace {

TEST(RedrawStartTest, ShortOutputWithoutAClearIsShownWhole) {
  EXPECT_EQ(RedrawStart("$ echo hi\r\nhi\r\n$ "), 0u);
  EXPECT_EQ(RedrawStart(""), 0u);
}

TEST(RedrawStartTest, TheLastFullScreenClearWins) {
  const std::string first = "old screen\x1b[H\x1b[2Jtop frame 1";
  const std::string out = first + "\x1b[H\x1b[2Jtop frame 2";
  EXPECT_EQ(out.substr(RedrawStart(out)), "\x1b[2Jtop frame 2");
  const std::string alternate = "prompt$ vim\x1b[?1049hthe file";
  EXPECT_EQ(alternate.substr(RedrawStart(alternate)), "\x1b[?1049hthe file");
  const std::string reset = "junk\x1b" "cafter a reset";
  EXPECT_EQ(reset.substr(RedrawStart(reset)), "\x1b" "cafter a reset");
}

TEST(RedrawStartTest, LongOutputKeepsItsLast64KiBFromALineStart) {
  std::string out = "\x1b[2Jan old clear\n";
  while (out.size() < 3 * kRedrawWindowBytes) out += "a line of output that scrolled by\n";
  const size_t start = RedrawStart(out);
  EXPECT_GE(start, out.size() - kRedrawWindowBytes);
  EXPECT_EQ(out[start - 1], '\n') << "the redraw starts at a line";
  EXPECT_LE(out.size() - start, kRedrawWindowBytes);
}

}  // namespace
}  // namespace abx::daemon
