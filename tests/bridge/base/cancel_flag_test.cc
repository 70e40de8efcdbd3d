#include "bridge/base/cancel_flag.h"

#include <atomic>
#include <cstdio>
#include <memory>
#include <thread>
#include <vector>

#include "gtest/gtest.h"

namespace abx {
namespace {

TEST(CancelFlagTest, SetRunsTheLiveWatchesOnce) {
  CancelFlag flag;
  int first = 0, second = 0;
  CancelFlag::Watch a(&flag, [&] { ++first; });
  CancelFlag::Watch b(&flag, [&] { ++second; });
  EXPECT_FALSE(flag.is_set());
  EXPECT_TRUE(flag.Set());
  EXPECT_TRUE(flag.is_set());
  EXPECT_FALSE(flag.Set());  // only the first Set counts
  EXPECT_EQ(first, 1);
  EXPECT_EQ(second, 1);
}

TEST(CancelFlagTest, AWatchMadeAfterTheSetRunsAtOnce) {
  CancelFlag flag;
  flag.Set();
  int woken = 0;
  CancelFlag::Watch watch(&flag, [&] { ++woken; });
  EXPECT_EQ(woken, 1);
}

TEST(CancelFlagTest, AnEndedWatchIsNotRun) {
  CancelFlag flag;
  int ended = 0, live = 0;
  CancelFlag::Watch keeper(&flag, [&] { ++live; });
  { CancelFlag::Watch gone(&flag, [&] { ++ended; }); }
  flag.Set();
  EXPECT_EQ(ended, 0);
  EXPECT_EQ(live, 1);
}

TEST(CancelFlagTest, NullFlagIsNeverSet) {
  int woken = 0;
  { CancelFlag::Watch watch(nullptr, [&] { ++woken; }); }
  EXPECT_EQ(woken, 0);
}

// Watches come and go on other threads while the flag is set: a watch's wake-up never
// runs after its Watch has ended, and never twice.
TEST(CancelFlagTest, WatchesEndingDuringTheSetAreSafe) {
  struct Slot {
    std::atomic<bool> ended{false};
    std::atomic<int> runs{0};
  };
  std::atomic<int> late{0}, twice{0}, woken{0};
  for (int round = 0; round < 200; ++round) {
    CancelFlag flag;
    std::vector<std::thread> threads;
    std::vector<std::vector<std::unique_ptr<Slot>>> slots(4);
    for (int i = 0; i < 4; ++i) {
      threads.emplace_back([&, i] {
        for (int k = 0; k < 50; ++k) {
          slots[i].push_back(std::make_unique<Slot>());
          Slot* slot = slots[i].back().get();
          {
            CancelFlag::Watch watch(&flag, [&, slot] {
              if (slot->ended.load()) late.fetch_add(1);
              if (slot->runs.fetch_add(1) > 0) twice.fetch_add(1);
              woken.fetch_add(1);
            });
          }
          slot->ended.store(true);
        }
      });
    }
    flag.Set();
    for (std::thread& t : threads) t.join();
  }
  EXPECT_EQ(late.load(), 0);
  EXPECT_EQ(twice.load(), 0);
  std::printf("watches woken by a Set while they lived: %d\n", woken.load());
}

}  // namespace
}  // namespace abx
