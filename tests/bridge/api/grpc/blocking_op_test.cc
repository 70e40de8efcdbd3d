// BlockingOp: the blocking Read / Write the gRPC reactors give their loops
// (bridge/api/grpc/blocking_op.h). Completions are played by the test as gRPC would
// report them: from another thread, or before `start` has even returned.
#include "bridge/api/grpc/blocking_op.h"

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <mutex>
#include <thread>
#include <vector>

#include "gtest/gtest.h"

namespace abx::api {
namespace {

// A one-shot signal between the test's threads.
class Latch {
 public:
  void Set() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      set_ = true;
    }
    cv_.notify_all();
  }
  void Wait() {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait(lock, [this] { return set_; });
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  bool set_ = false;
};

TEST(BlockingOpTest, CompletionBeforeStartReturnsDoesNotHang) {
  BlockingOp op;
  EXPECT_TRUE(op.Run([&] { op.Done(true); }));
  EXPECT_TRUE(op.Run([&] { op.Done(true); }));
}

TEST(BlockingOpTest, WaitsForTheCompletionFromAnotherThread) {
  BlockingOp op;
  Latch started;
  std::atomic<bool> returned{false};
  std::thread caller([&] {
    EXPECT_TRUE(op.Run([&] { started.Set(); }));
    returned = true;
  });
  started.Wait();
  EXPECT_FALSE(returned);  // nothing completed the operation yet
  op.Done(true);
  caller.join();
  EXPECT_TRUE(returned);
}

TEST(BlockingOpTest, AFailureFailsEveryLaterOperationWithoutStartingIt) {
  BlockingOp op;
  EXPECT_FALSE(op.Run([&] { op.Done(false); }));
  bool started = false;
  EXPECT_FALSE(op.Run([&] { started = true; }));
  EXPECT_FALSE(started);
}

TEST(BlockingOpTest, ConcurrentCallersStartOneOperationAtATime) {
  BlockingOp op;
  constexpr int kCallers = 8;
  std::mutex mu;
  std::condition_variable cv;
  int in_flight = 0;
  int most_in_flight = 0;
  int started = 0;
  std::vector<std::thread> callers;
  for (int i = 0; i < kCallers; ++i) {
    callers.emplace_back([&] {
      EXPECT_TRUE(op.Run([&] {
        std::lock_guard<std::mutex> lock(mu);
        ++started;
        most_in_flight = std::max(most_in_flight, ++in_flight);
        cv.notify_all();
      }));
    });
  }
  // Plays gRPC: completes each started operation, one after the other.
  for (int done = 0; done < kCallers; ++done) {
    {
      std::unique_lock<std::mutex> lock(mu);
      cv.wait(lock, [&] { return started > done; });
      --in_flight;
    }
    op.Done(true);
  }
  for (auto& caller : callers) caller.join();
  EXPECT_EQ(started, kCallers);
  EXPECT_EQ(most_in_flight, 1);
}

}  // namespace
}  // namespace abx::api
