// Frames waiting for a terminal's connection (bridge/core/terminals/pending_frames.h).
#include "bridge/core/terminals/pending_frames.h"

#include <gtest/gtest.h>

namespace abx::core {
namespace {

TEST(PendingFramesTest, KeepsFramesInOrderUntilTaken) {
  PendingFrames pending(100);
  std::string a = "ab", b = "{\"resize\"}", c = "cd";
  EXPECT_TRUE(pending.Push(false, a));
  EXPECT_TRUE(pending.Push(true, b));
  EXPECT_TRUE(pending.Push(false, c));
  EXPECT_EQ(pending.bytes(), 14u);
  auto frames = pending.TakeAll();
  ASSERT_EQ(frames.size(), 3u);
  EXPECT_EQ(frames[0], PendingFrames::Frame(false, "ab"));
  EXPECT_EQ(frames[1], PendingFrames::Frame(true, "{\"resize\"}"));
  EXPECT_EQ(frames[2], PendingFrames::Frame(false, "cd"));
  EXPECT_TRUE(pending.empty());
  EXPECT_EQ(pending.bytes(), 0u);
}

TEST(PendingFramesTest, RefusesAFrameThatWouldPassTheLimitAndKeepsIt) {
  PendingFrames pending(10);
  std::string first(8, 'x'), second(3, 'y'), third(2, 'z');
  EXPECT_TRUE(pending.Push(false, first));
  EXPECT_FALSE(pending.Push(false, second));
  EXPECT_EQ(second, "yyy");  // the caller still has it
  EXPECT_TRUE(pending.Push(false, third));  // exactly the limit
  EXPECT_EQ(pending.bytes(), 10u);
}

TEST(PendingFramesTest, WhatADroppedConnectionGivesBackGoesFirst) {
  PendingFrames pending(4);
  std::string later = "l";
  pending.Push(false, later);
  // More than the limit: it was accepted once, so it all comes back.
  pending.GiveBack({{false, "u1"}, {true, "u2-long"}});
  auto frames = pending.TakeAll();
  ASSERT_EQ(frames.size(), 3u);
  EXPECT_EQ(frames[0].second, "u1");
  EXPECT_EQ(frames[1].second, "u2-long");
  EXPECT_EQ(frames[2].second, "l");
}

TEST(PendingFramesTest, ClearLetsEverythingGo) {
  PendingFrames pending(10);
  std::string a = "abc";
  pending.Push(false, a);
  pending.Clear();
  EXPECT_TRUE(pending.empty());
  EXPECT_EQ(pending.bytes(), 0u);
  std::string full(10, 'f');
  EXPECT_TRUE(pending.Push(false, full));
}

}  // namespace
}  // namespace abx::core
