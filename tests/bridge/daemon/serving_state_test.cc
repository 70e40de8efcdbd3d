// ServingState (session accounting, draining, idleness) and MemoryTrimmer, driven from
// many threads at once as the daemon drives them: the gRPC handlers begin and end
// sessions, the signal thread starts a drain, the main thread waits for the exit. No
// gRPC, so under --config=tsan ThreadSanitizer judges all of it (tools/sanitizers).

#include "bridge/api/grpc/serving_state.h"

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <mutex>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "bridge/daemon/memory_trimmer.h"
#include "bridge/daemon/request_pool.h"

namespace abx::daemon {
namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

std::unique_ptr<core::BridgeCore> NewCore() {
  auto core = core::BridgeCore::Create();
  if (!core.ok()) {
    ADD_FAILURE() << core.error().message;
    return nullptr;
  }
  return std::move(core).value();
}

// A gate the test opens once: threads wait at it.
class Gate {
 public:
  void Open() {
    std::lock_guard<std::mutex> lock(mu_);
    open_ = true;
    cv_.notify_all();
  }
  void Wait() {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait(lock, [&] { return open_; });
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  bool open_ = false;
};

TEST(ServingStateTest, SessionsBegunAndEndedOnManyThreadsBalance) {
  RequestPool requests;
  api::ServingState state(NewCore(), &requests, nullptr);
  constexpr int kThreads = 16, kSessionsEach = 300;
  std::atomic<bool> done{false};
  std::thread reader([&] {
    while (!done) {
      const int64_t active = state.sessions_active();
      EXPECT_GE(active, 0);
      EXPECT_LE(active, kThreads);
      EXPECT_GE(state.uptime_seconds(), 0);
      EXPECT_FALSE(state.draining());
    }
  });
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < kSessionsEach; ++i) {
        auto lease = state.BeginSession();
        ASSERT_NE(lease, nullptr);
        if (i % 50 == 0) std::this_thread::sleep_for(milliseconds(1));
      }
    });
  }
  for (std::thread& t : threads) t.join();
  done = true;
  reader.join();
  EXPECT_EQ(state.sessions_total(), kThreads * kSessionsEach);
  EXPECT_EQ(state.sessions_active(), 0);
}

// SIGTERM's path: the signal thread starts the drain while sessions begin on other
// threads. Once StartDraining has returned nobody is admitted; the exit wait returns at
// once (a drain, not idleness); the session wait returns when the last open session
// ends, long before its grace.
TEST(ServingStateTest, DrainRefusesNewSessionsAndWaitsForTheOpenOnes) {
  RequestPool requests;
  api::ServingState state(NewCore(), &requests, nullptr);
  constexpr int kHolders = 6, kKnockers = 6;
  Gate release;
  std::atomic<int> holding{0};
  std::vector<std::thread> holders;
  for (int i = 0; i < kHolders; ++i) {
    holders.emplace_back([&] {
      auto lease = state.BeginSession();
      ASSERT_NE(lease, nullptr);
      ++holding;
      release.Wait();
    });
  }
  while (holding < kHolders) std::this_thread::yield();

  std::atomic<bool> drain_returned{false};
  std::atomic<int> admitted_after_drain{0}, admitted{0};
  std::vector<std::thread> knockers;
  for (int i = 0; i < kKnockers; ++i) {
    knockers.emplace_back([&] {
      for (int n = 0; n < 2000; ++n) {
        const bool after = drain_returned.load();
        if (auto lease = state.BeginSession()) {
          ++admitted;
          if (after) ++admitted_after_drain;
        }
      }
    });
  }
  std::atomic<bool> exit_returned{false}, exit_was_idle{true};
  std::thread main_thread([&] {
    exit_was_idle = state.WaitForExit(std::chrono::seconds(0));
    exit_returned = true;
  });
  std::this_thread::sleep_for(milliseconds(20));
  std::thread signal_thread([&] {
    state.StartDraining();
    drain_returned = true;
  });
  signal_thread.join();
  main_thread.join();  // would hang if the drain did not wake it
  EXPECT_TRUE(exit_returned);
  EXPECT_FALSE(exit_was_idle);
  for (std::thread& t : knockers) t.join();
  EXPECT_EQ(admitted_after_drain.load(), 0);
  EXPECT_EQ(state.BeginSession(), nullptr);
  EXPECT_EQ(state.sessions_active(), kHolders);

  const auto started = Clock::now();
  std::thread waiter([&] { state.WaitForSessions(std::chrono::seconds(60)); });
  std::this_thread::sleep_for(milliseconds(100));
  release.Open();
  for (std::thread& t : holders) t.join();
  waiter.join();
  EXPECT_LT(Clock::now() - started, std::chrono::seconds(30)) << "waited out the grace";
  EXPECT_EQ(state.sessions_active(), 0);
  EXPECT_EQ(state.sessions_total(), kHolders + admitted.load());
}

// The idle exit counts from the end of the last session, ended on another thread.
TEST(ServingStateTest, IdleExitCountsFromTheLastSessionsEnd) {
  RequestPool requests;
  api::ServingState state(NewCore(), &requests, nullptr);
  std::atomic<int64_t> ended_at_ms{0};
  auto since_epoch_ms = [] {
    return std::chrono::duration_cast<milliseconds>(Clock::now().time_since_epoch()).count();
  };
  std::thread session([&] {
    auto lease = state.BeginSession();
    ASSERT_NE(lease, nullptr);
    std::this_thread::sleep_for(milliseconds(1500));
    ended_at_ms = since_epoch_ms();
  });
  while (state.sessions_active() == 0) std::this_thread::yield();
  EXPECT_TRUE(state.WaitForExit(std::chrono::seconds(1)));
  const int64_t returned_at_ms = since_epoch_ms();
  session.join();
  ASSERT_GT(ended_at_ms.load(), 0);
  EXPECT_GE(returned_at_ms - ended_at_ms, 1000 - 5) << "idled out while a session was open "
                                                       "or before a second had passed";
}

// The trimmer's destructor stops it at once: not after its next look at idleness (once
// a second), nor after the hour it would wait for an idle spell.
TEST(MemoryTrimmerTest, StopsAtOnce) {
  RequestPool requests;
  api::ServingState state(NewCore(), &requests, nullptr);
  const auto started = Clock::now();
  {
    MemoryTrimmer::Options trim;
    trim.idle_release_after = std::chrono::hours(1);
    trim.state = &state;
    const MemoryTrimmer idle_for_an_hour(trim);
    std::this_thread::sleep_for(milliseconds(50));
  }
  EXPECT_LT(Clock::now() - started, milliseconds(500));
}

// Idle spells: once no session has been open for idle_release_after, the trimmer gives
// the mapped file pages back, once per spell; never while a session is open.
TEST(MemoryTrimmerTest, GivesFilePagesBackOncePerIdleSpell) {
  RequestPool requests;
  api::ServingState state(NewCore(), &requests, nullptr);
  MemoryTrimmer::Options trim;
  trim.idle_release_after = milliseconds(200);
  trim.state = &state;
  const MemoryTrimmer trimmer(trim);
  auto wait_for_releases = [&](int64_t n) {
    const auto until = Clock::now() + std::chrono::seconds(10);
    while (trimmer.idle_releases() < n && Clock::now() < until) {
      std::this_thread::sleep_for(milliseconds(20));
    }
    return trimmer.idle_releases();
  };
  EXPECT_EQ(wait_for_releases(1), 1);  // idle from the start
  std::this_thread::sleep_for(milliseconds(1500));
  EXPECT_EQ(trimmer.idle_releases(), 1);  // once per spell
  {
    auto lease = state.BeginSession();
    std::this_thread::sleep_for(milliseconds(1500));
    EXPECT_EQ(trimmer.idle_releases(), 1);  // a session is open
  }
  EXPECT_EQ(wait_for_releases(2), 2);  // the next spell
}

}  // namespace
}  // namespace abx::daemon
