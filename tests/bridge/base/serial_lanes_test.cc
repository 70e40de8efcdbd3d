// SerialLanes: per key, tasks run one at a time in the order handed over; a task that
// blocks holds up its own key only. Plain threads stand in for the request pool.

#include "bridge/base/serial_lanes.h"

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <map>
#include <mutex>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

namespace abx {
namespace {

class ThreadRunner : public TaskRunner {
 public:
  ~ThreadRunner() override {
    for (auto& t : threads_) t.join();
  }
  void Run(std::function<void()> task) override {
    std::lock_guard<std::mutex> lock(mu_);
    threads_.emplace_back(std::move(task));
  }
  size_t started() {
    std::lock_guard<std::mutex> lock(mu_);
    return threads_.size();
  }

 private:
  std::mutex mu_;
  std::vector<std::thread> threads_;
};

TEST(SerialLanesTest, EachKeyRunsInTheOrderHandedOver) {
  ThreadRunner runner;
  std::mutex mu;
  std::condition_variable cv;
  bool all_handed_over = false;
  std::map<std::string, std::vector<int>> ran;
  std::atomic<int> done{0};
  constexpr int kTasks = 2000;
  {
    SerialLanes lanes(&runner);
    for (int i = 0; i < kTasks; ++i) {
      const std::string key = "k" + std::to_string(i % 3);
      lanes.Run(key, [&, key, i] {
        std::unique_lock<std::mutex> lock(mu);
        // The first task of each key holds its lane until every task was handed over.
        cv.wait(lock, [&] { return all_handed_over; });
        ran[key].push_back(i);
        ++done;
      });
    }
  }  // the lanes may go before their tasks do
  {
    std::lock_guard<std::mutex> lock(mu);
    all_handed_over = true;
  }
  cv.notify_all();
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (done < kTasks && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  ASSERT_EQ(done.load(), kTasks);
  std::lock_guard<std::mutex> lock(mu);
  ASSERT_EQ(ran.size(), 3u);
  for (const auto& [key, order] : ran) {
    for (size_t j = 1; j < order.size(); ++j) ASSERT_LT(order[j - 1], order[j]) << key;
  }
  EXPECT_EQ(runner.started(), 3u) << "one drain per key took everything queued behind its first task";
}

TEST(SerialLanesTest, ABlockedTaskHoldsUpItsOwnKeyOnly) {
  ThreadRunner runner;
  SerialLanes lanes(&runner);
  std::mutex mu;
  std::condition_variable cv;
  bool release = false, second_a = false, b = false;
  lanes.Run("a", [&] {
    std::unique_lock<std::mutex> lock(mu);
    cv.wait(lock, [&] { return release; });
  });
  lanes.Run("a", [&] {
    std::lock_guard<std::mutex> lock(mu);
    second_a = true;
    cv.notify_all();
  });
  lanes.Run("b", [&] {
    std::lock_guard<std::mutex> lock(mu);
    b = true;
    cv.notify_all();
  });
  std::unique_lock<std::mutex> lock(mu);
  ASSERT_TRUE(cv.wait_for(lock, std::chrono::seconds(10), [&] { return b; }));
  EXPECT_FALSE(second_a);
  release = true;
  cv.notify_all();
  ASSERT_TRUE(cv.wait_for(lock, std::chrono::seconds(10), [&] { return second_a; }));
}

}  // namespace
}  // namespace abx
