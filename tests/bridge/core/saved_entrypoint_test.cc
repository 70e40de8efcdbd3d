// Snapshots of one sandbox that overlap share its launcher (saved_entrypoint.h): written
// by the first, removed by the last, never removed while one is held, never written
// twice at once. From many threads, so ThreadSanitizer judges it (tools/sanitizers).
#include "bridge/core/saved_entrypoint.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

namespace abx::core {
namespace {

TEST(SavedEntrypointLeasesTest, TheFirstWritesTheLastRemovesAndNoneSeesItMissing) {
  SavedEntrypointLeases leases;
  std::atomic<bool> present{false};
  std::atomic<int> writing{0}, writes{0}, removes{0}, missing_while_held{0};
  auto write = [&] {
    EXPECT_EQ(writing.fetch_add(1), 0) << "two writes at once";
    std::this_thread::sleep_for(std::chrono::microseconds(200));
    present = true;
    ++writes;
    writing.fetch_sub(1);
    return true;
  };
  auto remove = [&] {
    present = false;
    ++removes;
  };
  std::vector<std::thread> snapshots;
  for (int t = 0; t < 8; ++t) {
    snapshots.emplace_back([&] {
      for (int i = 0; i < 200; ++i) {
        ASSERT_TRUE(leases.Acquire("sbx-1", write));
        if (!present) ++missing_while_held;
        std::this_thread::yield();
        leases.Release("sbx-1", remove);
      }
    });
  }
  for (auto& t : snapshots) t.join();
  EXPECT_EQ(missing_while_held.load(), 0);
  EXPECT_FALSE(present.load()) << "the last release removes it";
  EXPECT_EQ(writes.load(), removes.load());
  EXPECT_GE(writes.load(), 1);
}

TEST(SavedEntrypointLeasesTest, AFailedWriteHoldsNothingAndTheNextCallerWritesAgain) {
  SavedEntrypointLeases leases;
  int writes = 0, removes = 0;
  EXPECT_FALSE(leases.Acquire("sbx-1", [&] { ++writes; return false; }));
  leases.Release("sbx-1", [&] { ++removes; });  // nothing held: no removal
  EXPECT_EQ(removes, 0);
  EXPECT_TRUE(leases.Acquire("sbx-1", [&] { ++writes; return true; }));
  EXPECT_TRUE(leases.Acquire("sbx-1", [&] { ++writes; return true; }));  // shared, not written again
  EXPECT_EQ(writes, 2);
  leases.Release("sbx-1", [&] { ++removes; });
  EXPECT_EQ(removes, 0);
  leases.Release("sbx-1", [&] { ++removes; });
  EXPECT_EQ(removes, 1);
  // Another sandbox's launcher is its own.
  EXPECT_TRUE(leases.Acquire("sbx-2", [&] { ++writes; return true; }));
  EXPECT_EQ(writes, 3);
}

}  // namespace
}  // namespace abx::core
