// The core's background work: never more threads than its bound however many tasks
// come at once, every task run once, tasks due later run then without holding a thread,
// and the destructor waiting for all of them. No gRPC, so ThreadSanitizer judges it
// (tools/sanitizers).

#include "bridge/core/background_tasks.h"

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

namespace abx::core {
namespace {

// Holds tasks until opened.
class Gate {
 public:
  void Wait() {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait(lock, [this] { return open_; });
  }
  void Open() {
    std::lock_guard<std::mutex> lock(mu_);
    open_ = true;
    cv_.notify_all();
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  bool open_ = false;
};

TEST(BackgroundTasksTest, ABurstOfTasksRunsOnAtMostTheBoundOfThreads) {
  constexpr size_t kBound = 4;
  constexpr int kTasks = 200;
  Gate gate;
  std::atomic<int> running{0}, most_running{0}, done{0};
  {
    BackgroundTasks tasks(kBound);
    for (int i = 0; i < kTasks; ++i) {
      tasks.Run([&] {
        const int now = ++running;
        int seen = most_running.load();
        while (now > seen && !most_running.compare_exchange_weak(seen, now)) {
        }
        gate.Wait();
        --running;
        ++done;
      });
    }
    // Every thread the bound allows is now blocked in a task; the rest wait in line.
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (running.load() < static_cast<int>(kBound) &&
           std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    const BackgroundTasks::Stats stats = tasks.stats();
    EXPECT_EQ(stats.threads, kBound);
    EXPECT_EQ(stats.queued, static_cast<size_t>(kTasks) - kBound);
    gate.Open();
  }  // the destructor waits for all of them
  EXPECT_EQ(done.load(), kTasks);
  EXPECT_EQ(most_running.load(), static_cast<int>(kBound));
}

TEST(BackgroundTasksTest, ThreadsEndWhenThereIsNoWork) {
  BackgroundTasks tasks(2);
  std::atomic<int> done{0};
  for (int i = 0; i < 10; ++i) tasks.Run([&] { ++done; });
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (tasks.stats().threads > 0 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  EXPECT_EQ(tasks.stats().threads, 0u);
  EXPECT_EQ(done.load(), 10);
  // And start again for new work.
  tasks.Run([&] { ++done; });
  while (done.load() < 11 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  EXPECT_EQ(done.load(), 11);
}

TEST(BackgroundTasksTest, TheDestructorWaitsForATaskStillRunning) {
  auto finished = std::make_shared<std::atomic<bool>>(false);
  {
    BackgroundTasks tasks(1);
    tasks.Run([finished] {
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
      *finished = true;
    });
  }
  EXPECT_TRUE(*finished);
}

TEST(BackgroundTasksTest, ATaskDueLaterRunsThenAndHoldsNoThreadMeanwhile) {
  using Clock = BackgroundTasks::Clock;
  BackgroundTasks tasks(1);
  std::atomic<int> order{0};
  std::atomic<int> later_at{-1}, now_at{-1};
  const Clock::time_point start = Clock::now();
  std::atomic<int64_t> later_ran_after_ms{-1};
  tasks.RunAt(start + std::chrono::milliseconds(300), [&] {
    later_ran_after_ms = std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - start).count();
    later_at = order++;
  });
  // The one thread is free: a task for now runs at once, before the one due later.
  tasks.Run([&] { now_at = order++; });
  const auto deadline = Clock::now() + std::chrono::seconds(10);
  while (later_at.load() < 0 && Clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  EXPECT_EQ(now_at.load(), 0);
  EXPECT_EQ(later_at.load(), 1);
  EXPECT_GE(later_ran_after_ms.load(), 300);
  EXPECT_EQ(tasks.stats().timers, 0u);
}

TEST(BackgroundTasksTest, TheDestructorRunsWhatWaitsForItsTimeAtOnce) {
  std::atomic<bool> ran{false};
  const auto start = BackgroundTasks::Clock::now();
  {
    BackgroundTasks tasks(2);
    tasks.RunAt(start + std::chrono::hours(1), [&] { ran = true; });
    EXPECT_EQ(tasks.stats().timers, 1u);
  }
  EXPECT_TRUE(ran);
  EXPECT_LT(BackgroundTasks::Clock::now() - start, std::chrono::seconds(10));
}

}  // namespace
}  // namespace abx::core
