// RunQueue (bridge/core/run_queue.h): runs of one code context take turns in arrival
// order; a waiter leaves on its cancel or deadline; a poisoned queue fails everyone; at
// most kMaxWaiting wait. Threads of its own, no gRPC: ThreadSanitizer judges it
// (tools/sanitizers).
#include "bridge/core/run_queue.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <mutex>
#include <thread>
#include <vector>

#include "bridge/base/time_util.h"

namespace abx::core {
namespace {

using std::chrono::milliseconds;

TEST(RunQueueTest, RunsTakeTurnsInArrivalOrder) {
  auto queue = std::make_shared<RunQueue>("code context", "code.run");
  CancelToken first_token;
  ASSERT_TRUE(queue->Enter(0, &first_token).ok());  // the running one
  constexpr int kWaiters = 8;
  // Arrival is the place taken (Enter takes one, then waits for it): taken here, one
  // after the other, the order is known without guessing when a thread got there. The
  // threads then wait latest first, so that their own start order cannot be what is seen.
  std::vector<uint64_t> tickets;
  for (int i = 0; i < kWaiters; ++i) {
    auto ticket = queue->Reserve();
    ASSERT_TRUE(ticket.ok());
    tickets.push_back(*ticket);
  }
  std::mutex mu;
  std::vector<int> order;
  std::vector<std::thread> threads;
  std::vector<CancelToken> tokens(kWaiters);
  for (int i = kWaiters - 1; i >= 0; --i) {
    threads.emplace_back([&, i] {
      ASSERT_TRUE(queue->EnterReserved(tickets[i], 0, &tokens[i]).ok());
      {
        std::lock_guard<std::mutex> lock(mu);
        order.push_back(i);
      }
      queue->Leave();
    });
  }
  queue->Leave();
  for (auto& t : threads) t.join();
  std::vector<int> expected;
  for (int i = 0; i < kWaiters; ++i) expected.push_back(i);
  EXPECT_EQ(order, expected);
}

TEST(RunQueueTest, AWaiterLeavesOnCancelAndOnItsDeadline) {
  auto queue = std::make_shared<RunQueue>("code context", "code.run");
  CancelToken running;
  ASSERT_TRUE(queue->Enter(0, &running).ok());
  CancelToken cancelled;
  Status cancel_status = OkStatus();
  std::thread waiter([&] { cancel_status = queue->Enter(0, &cancelled); });
  std::this_thread::sleep_for(milliseconds(50));
  cancelled.Cancel();
  waiter.join();
  ASSERT_FALSE(cancel_status.ok());
  EXPECT_EQ(cancel_status.error().code, ErrorCode::kCancelled);

  CancelToken timed;
  const Status late = queue->Enter(NowMillis() + 100, &timed);
  ASSERT_FALSE(late.ok());
  EXPECT_EQ(late.error().code, ErrorCode::kTimeout);

  // A token cancelled before it arrives neither waits nor deadlocks.
  CancelToken already;
  already.Cancel();
  const Status at_once = queue->Enter(0, &already);
  ASSERT_FALSE(at_once.ok());
  EXPECT_EQ(at_once.error().code, ErrorCode::kCancelled);

  // The ones that left do not hold up the next.
  queue->Leave();
  CancelToken next;
  EXPECT_TRUE(queue->Enter(NowMillis() + 1000, &next).ok());
  queue->Leave();
}

TEST(RunQueueTest, PoisonFailsTheWaitingAndTheLater) {
  auto queue = std::make_shared<RunQueue>("code context", "code.run");
  CancelToken running;
  ASSERT_TRUE(queue->Enter(0, &running).ok());
  CancelToken waiting_token;
  Status waiting = OkStatus();
  std::thread waiter([&] { waiting = queue->Enter(0, &waiting_token); });
  std::this_thread::sleep_for(milliseconds(50));
  queue->Poison(MakeError(ErrorCode::kInvalidState, "stuck kernel"));
  waiter.join();
  ASSERT_FALSE(waiting.ok());
  EXPECT_EQ(waiting.error().message, "stuck kernel");
  queue->Leave();
  CancelToken later;
  EXPECT_EQ(queue->Enter(0, &later).error().message, "stuck kernel");
}

TEST(RunQueueTest, AtMostSixtyFourWait) {
  auto queue = std::make_shared<RunQueue>("code context", "code.run");
  CancelToken running;
  ASSERT_TRUE(queue->Enter(0, &running).ok());
  std::vector<CancelToken> tokens(RunQueue::kMaxWaiting + 1);
  std::vector<std::thread> waiters;
  std::vector<Status> results(RunQueue::kMaxWaiting, OkStatus());
  // Each waiter's place is taken here (as Enter takes it first), so that all 64 hold one
  // before the probe, however late their threads run.
  for (size_t i = 0; i < RunQueue::kMaxWaiting; ++i) {
    auto ticket = queue->Reserve();
    ASSERT_TRUE(ticket.ok()) << i;
    waiters.emplace_back([&, i, ticket = *ticket] { results[i] = queue->EnterReserved(ticket, 0, &tokens[i]); });
  }
  // The 65th is refused at once, retryably, while 64 wait.
  CancelToken probe;
  const Status refused = queue->Enter(NowMillis() + 2000, &probe);  // bounded, should it wait
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.error().code, ErrorCode::kInvalidState);
  EXPECT_TRUE(refused.error().retryable);
  for (auto& token : tokens) token.Cancel();
  for (auto& t : waiters) t.join();
  for (const Status& s : results) EXPECT_FALSE(s.ok());
  queue->Leave();
}

// Places taken in one order (as lines arrive on a session's reader) are served in that
// order, whichever thread enters first; a place given up lets the next one through.
TEST(RunQueueTest, PlacesAreServedInTheOrderTakenNotEntered) {
  auto queue = std::make_shared<RunQueue>("shell", "the shell command");
  constexpr int kPlaces = 16;
  std::vector<std::shared_ptr<RunPlace>> places;
  for (int i = 0; i < kPlaces; ++i) {
    auto place = RunPlace::Take(queue);
    ASSERT_TRUE(place.ok());
    places.push_back(*place);
  }
  auto abandoned = RunPlace::Take(queue);  // taken last, dropped unentered: no one waits for it
  ASSERT_TRUE(abandoned.ok());
  abandoned->reset();
  std::mutex mu;
  std::vector<int> order;
  std::vector<std::thread> threads;
  for (int i = kPlaces - 1; i >= 0; --i) {  // entered in reverse
    threads.emplace_back([&, i] {
      CancelToken token;
      EXPECT_TRUE(places[i]->Enter(0, &token).ok());  // no ASSERT: the thread must Leave
      {
        std::lock_guard<std::mutex> lock(mu);
        order.push_back(i);
      }
      queue->Leave();
    });
  }
  for (auto& t : threads) t.join();
  std::vector<int> expected;
  for (int i = 0; i < kPlaces; ++i) expected.push_back(i);
  EXPECT_EQ(order, expected);
  // A place dropped before it entered does not hold up the next.
  auto first = RunPlace::Take(queue);
  auto second = RunPlace::Take(queue);
  ASSERT_TRUE(first.ok() && second.ok());
  first->reset();
  CancelToken token;
  EXPECT_TRUE((*second)->Enter(NowMillis() + 1000, &token).ok());
  queue->Leave();
  // PlaceIn keeps a place of the same queue and takes a new one for another.
  auto other = std::make_shared<RunQueue>("shell", "the shell command");
  auto mine = RunPlace::Take(queue);
  ASSERT_TRUE(mine.ok());
  EXPECT_EQ(PlaceIn(queue, *mine).value(), *mine);
  EXPECT_NE(PlaceIn(other, *mine).value(), *mine);
}

}  // namespace
}  // namespace abx::core
