#include "bridge/daemon/request_pool.h"

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <set>
#include <thread>
#include <vector>

#include "gtest/gtest.h"

namespace abx::daemon {
namespace {

using std::chrono::milliseconds;

// Blocks the tasks that call Wait() until Open().
class Gate {
 public:
  void Wait() {
    std::unique_lock<std::mutex> lock(mu_);
    ++waiting_;
    cv_.notify_all();
    cv_.wait(lock, [&] { return open_; });
  }
  void Open() {
    std::lock_guard<std::mutex> lock(mu_);
    open_ = true;
    cv_.notify_all();
  }
  // True once `count` tasks are waiting (within 10 s).
  bool AwaitWaiting(int count) {
    std::unique_lock<std::mutex> lock(mu_);
    return cv_.wait_for(lock, std::chrono::seconds(10), [&] { return waiting_ >= count; });
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  int waiting_ = 0;
  bool open_ = false;
};

// Polls `pool` until `done` holds (within 10 s).
template <typename Predicate>
bool AwaitStats(const RequestPool& pool, Predicate done) {
  for (int i = 0; i < 2000; ++i) {
    if (done(pool.stats())) return true;
    std::this_thread::sleep_for(milliseconds(5));
  }
  return done(pool.stats());
}

// Requests that block (a long exec.run) never keep others from starting: 40 tasks that
// all wait for each other finish, with at most 4 idle threads kept.
TEST(RequestPoolTest, BlockedTasksNeverStarveNewOnes) {
  RequestPool pool({/*max_idle=*/4, /*idle_timeout=*/milliseconds(10000)});
  Gate gate;
  std::atomic<int> finished{0};
  constexpr int kTasks = 40;
  for (int i = 0; i < kTasks; ++i) {
    pool.Run([&] {
      gate.Wait();
      finished.fetch_add(1);
    });
  }
  ASSERT_TRUE(gate.AwaitWaiting(kTasks)) << "not every task started while the others blocked";
  EXPECT_EQ(pool.stats().threads, static_cast<size_t>(kTasks));
  gate.Open();
  ASSERT_TRUE(AwaitStats(pool, [](const RequestPool::Stats& s) { return s.threads == 4; }));
  EXPECT_EQ(finished.load(), kTasks);
  EXPECT_EQ(pool.stats().idle, 4u);  // the rest exited as soon as they were idle
}

// One request after another runs on the same thread: no thread is created per request.
TEST(RequestPoolTest, IdleThreadsAreReused) {
  RequestPool pool;
  std::set<std::thread::id> seen;
  std::mutex mu;
  for (int i = 0; i < 50; ++i) {
    std::atomic<bool> done{false};
    pool.Run([&] {
      std::lock_guard<std::mutex> lock(mu);
      seen.insert(std::this_thread::get_id());
      done = true;
    });
    // The next request comes once the thread is idle again, as between a host's calls.
    ASSERT_TRUE(AwaitStats(pool, [&](const RequestPool::Stats& s) { return done && s.idle == 1; }));
  }
  EXPECT_EQ(seen.size(), 1u);
  EXPECT_EQ(pool.stats().threads_started, 1u);
}

TEST(RequestPoolTest, IdleThreadsExitAfterTheTimeout) {
  RequestPool pool({/*max_idle=*/16, /*idle_timeout=*/milliseconds(100)});
  Gate gate;
  for (int i = 0; i < 8; ++i) pool.Run([&] { gate.Wait(); });
  ASSERT_TRUE(gate.AwaitWaiting(8));
  gate.Open();
  ASSERT_TRUE(AwaitStats(pool, [](const RequestPool::Stats& s) { return s.threads == 0; }));
  EXPECT_EQ(pool.stats().idle, 0u);
  // And the pool starts threads again afterwards.
  std::atomic<bool> ran{false};
  pool.Run([&] { ran = true; });
  ASSERT_TRUE(AwaitStats(pool, [&](const RequestPool::Stats&) { return ran.load(); }));
}

TEST(RequestPoolTest, ReleaseIdleEndsIdleThreadsButNotRunningOnes) {
  RequestPool pool({/*max_idle=*/16, /*idle_timeout=*/milliseconds(60000)});
  Gate quick, slow;
  for (int i = 0; i < 6; ++i) pool.Run([&] { quick.Wait(); });
  pool.Run([&] { slow.Wait(); });
  ASSERT_TRUE(quick.AwaitWaiting(6));
  ASSERT_TRUE(slow.AwaitWaiting(1));
  quick.Open();
  ASSERT_TRUE(AwaitStats(pool, [](const RequestPool::Stats& s) { return s.idle == 6; }));
  pool.ReleaseIdle();
  ASSERT_TRUE(AwaitStats(pool, [](const RequestPool::Stats& s) { return s.threads == 1; }));
  EXPECT_EQ(pool.stats().idle, 0u);
  slow.Open();
  ASSERT_TRUE(AwaitStats(pool, [](const RequestPool::Stats& s) { return s.idle == 1; }));
}

// Many tasks handed to few idle threads at once: each runs exactly once.
TEST(RequestPoolTest, EveryTaskRunsExactlyOnceUnderChurn) {
  RequestPool pool({/*max_idle=*/2, /*idle_timeout=*/milliseconds(5)});
  constexpr int kSubmitters = 4, kEach = 500;
  std::vector<std::atomic<int>> runs(kSubmitters * kEach);
  std::vector<std::thread> submitters;
  for (int t = 0; t < kSubmitters; ++t) {
    submitters.emplace_back([&, t] {
      for (int i = 0; i < kEach; ++i) {
        pool.Run([&runs, index = t * kEach + i] { runs[index].fetch_add(1); });
        if (i % 50 == 0) std::this_thread::sleep_for(milliseconds(2));
      }
    });
  }
  for (std::thread& s : submitters) s.join();
  ASSERT_TRUE(AwaitStats(pool, [](const RequestPool::Stats& s) { return s.threads == 0; }));
  for (size_t i = 0; i < runs.size(); ++i) EXPECT_EQ(runs[i].load(), 1) << "task " << i;
}

// A task still running when the pool goes finishes normally.
TEST(RequestPoolTest, TasksOutliveThePool) {
  Gate gate;
  std::atomic<bool> finished{false};
  {
    RequestPool pool;
    pool.Run([&] {
      gate.Wait();
      finished = true;
    });
    ASSERT_TRUE(gate.AwaitWaiting(1));
  }
  gate.Open();
  for (int i = 0; i < 2000 && !finished; ++i) std::this_thread::sleep_for(milliseconds(5));
  EXPECT_TRUE(finished.load());
}

}  // namespace
}  // namespace abx::daemon
