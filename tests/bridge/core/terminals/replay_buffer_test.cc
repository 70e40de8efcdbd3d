// The kept output of a terminal (bridge/core/terminals/replay_buffer.h).
#include "bridge/core/terminals/replay_buffer.h"

#include <string>

#include <gtest/gtest.h>

namespace abx::core {
namespace {

TEST(ReplayBufferTest, CountsOffsetsFromTheStartAndReadsByOffset) {
  ReplayBuffer kept(1024);
  kept.Append("hello ", std::nullopt);
  kept.Append("world", std::nullopt);
  EXPECT_EQ(kept.end(), 11u);
  EXPECT_EQ(kept.kept_from(), 0u);
  EXPECT_EQ(kept.Read(0, 100), "hello world");
  EXPECT_EQ(kept.Read(6, 3), "wor");
  EXPECT_EQ(kept.Read(11, 10), "");
}

TEST(ReplayBufferTest, KeepsTheLastWindowAndLetsGoInBatches) {
  ReplayBuffer kept(16);
  for (int i = 0; i < 100; ++i) kept.Append(std::string(1, static_cast<char>('a' + i % 26)), std::nullopt);
  EXPECT_EQ(kept.end(), 100u);
  // Let go 5 bytes at a time (more than a quarter window): the last time at end 96.
  EXPECT_EQ(kept.kept_from(), 80u);
  const uint64_t held = kept.end() - kept.kept_from();
  EXPECT_GE(held, 16u);          // the whole window
  EXPECT_LE(held, 16u + 4u + 1u);  // and at most a batch (a quarter window) more
  // The bytes kept are the ones at their offsets.
  EXPECT_EQ(kept.Read(99, 1), std::string(1, static_cast<char>('a' + 99 % 26)));
  EXPECT_EQ(kept.Read(kept.kept_from(), 1), std::string(1, static_cast<char>('a' + kept.kept_from() % 26)));
}

TEST(ReplayBufferTest, KeepsAllTheHolderIsOwedPastTheWindow) {
  ReplayBuffer kept(16);
  for (int i = 0; i < 10; ++i) kept.Append(std::string(10, 'x'), /*owed_from=*/5);
  EXPECT_EQ(kept.end(), 100u);
  EXPECT_EQ(kept.kept_from(), 5u);  // let go up to the owed byte, not past it
  EXPECT_EQ(kept.Read(5, 1000).size(), 95u);
  // Once the holder has caught up, the window is all that stays.
  kept.Append("y", /*owed_from=*/101);
  EXPECT_EQ(kept.kept_from(), 85u);  // the window of the 101 bytes
}

TEST(ReplayBufferTest, StartsAtAnOffsetOfExecds) {
  ReplayBuffer kept(1024);
  kept.StartAt(5000);
  EXPECT_EQ(kept.end(), 5000u);
  EXPECT_EQ(kept.kept_from(), 5000u);
  kept.Append("ab", std::nullopt);
  EXPECT_EQ(kept.end(), 5002u);
  EXPECT_EQ(kept.Read(5000, 10), "ab");
}

TEST(ReplayBufferTest, AReplayAddsOnlyWhatIsNew) {
  ReplayBuffer kept(1024);
  kept.Append("abcdef", std::nullopt);
  // execd's window from offset 2 overlaps what is kept: only "gh" is new.
  EXPECT_TRUE(kept.AppendReplay(2, "cdefgh", std::nullopt));
  EXPECT_EQ(kept.end(), 8u);
  EXPECT_EQ(kept.Read(0, 100), "abcdefgh");
  // A window wholly kept already adds nothing.
  EXPECT_FALSE(kept.AppendReplay(4, "efgh", std::nullopt));
  EXPECT_EQ(kept.end(), 8u);
}

TEST(ReplayBufferTest, AReplayBeyondTheEndStartsThereAndTheGapShows) {
  ReplayBuffer kept(1024);
  kept.Append("abc", std::nullopt);
  // Output 3..9 was lost while no connection was up: the kept output starts at 10.
  EXPECT_TRUE(kept.AppendReplay(10, "klm", std::nullopt));
  EXPECT_EQ(kept.kept_from(), 10u);
  EXPECT_EQ(kept.end(), 13u);
  EXPECT_EQ(kept.Read(10, 100), "klm");
  EXPECT_EQ(kept.Read(0, 100), "");  // gone with the gap
}

}  // namespace
}  // namespace abx::core
