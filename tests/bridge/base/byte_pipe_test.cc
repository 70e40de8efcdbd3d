// BytePipe: bytes pushed on one thread come out in order on another; a full pipe tells
// its producer to wait and calls it back once half is taken; a reader with nothing
// ready waits and is resumed; End and Abort reach a waiting reader.

#include "bridge/base/byte_pipe.h"

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <string>
#include <thread>

#include <gtest/gtest.h>

namespace abx {
namespace {

TEST(BytePipeTest, BytesArriveInOrderAndAFullPipeHoldsItsProducer) {
  BytePipe pipe;
  std::mutex mu;
  std::condition_variable cv;
  bool room = true, readable = false;
  pipe.SetOnRoom([&] {
    std::lock_guard<std::mutex> lock(mu);
    room = true;
    cv.notify_all();
  });
  pipe.SetResume([&] {
    std::lock_guard<std::mutex> lock(mu);
    readable = true;
    cv.notify_all();
  });
  constexpr size_t kChunks = 200, kChunkBytes = 64 << 10;  // 12.5 MiB through a 1 MiB pipe
  std::atomic<size_t> max_ahead{0};
  std::thread producer([&] {
    for (size_t i = 0; i < kChunks; ++i) {
      {
        std::unique_lock<std::mutex> lock(mu);
        cv.wait(lock, [&] { return room; });
      }
      const bool more = pipe.Push(std::string(kChunkBytes, static_cast<char>('a' + i % 26)));
      if (!more) {
        std::lock_guard<std::mutex> lock(mu);
        room = false;
      }
    }
    pipe.End();
  });
  std::string got;
  char buffer[10000];
  for (;;) {
    const size_t n = pipe.Read(buffer, sizeof buffer);
    if (n == 0) break;
    ASSERT_NE(n, BytePipe::kAbort);
    if (n == BytePipe::kWait) {
      std::unique_lock<std::mutex> lock(mu);
      cv.wait(lock, [&] { return readable; });
      readable = false;
      continue;
    }
    got.append(buffer, n);
    max_ahead = std::max<size_t>(max_ahead, pipe.pushed() - got.size());
  }
  producer.join();
  ASSERT_EQ(got.size(), kChunks * kChunkBytes);
  for (size_t i = 0; i < kChunks; ++i) {
    ASSERT_EQ(got[i * kChunkBytes], static_cast<char>('a' + i % 26)) << i;
    ASSERT_EQ(got[(i + 1) * kChunkBytes - 1], static_cast<char>('a' + i % 26)) << i;
  }
  EXPECT_LE(max_ahead.load(), BytePipe::kCapacity + kChunkBytes) << "the pipe held more than its capacity";
  EXPECT_EQ(pipe.pushed(), kChunks * kChunkBytes);
}

TEST(BytePipeTest, EndAndAbortReachAWaitingReader) {
  BytePipe ended, aborted;
  std::atomic<int> resumed{0};
  ended.SetResume([&] { ++resumed; });
  aborted.SetResume([&] { ++resumed; });
  char buffer[16];
  EXPECT_EQ(ended.Read(buffer, sizeof buffer), BytePipe::kWait);
  EXPECT_EQ(aborted.Read(buffer, sizeof buffer), BytePipe::kWait);
  ended.End();
  aborted.Abort();
  EXPECT_EQ(resumed.load(), 2);
  EXPECT_EQ(ended.Read(buffer, sizeof buffer), 0u);
  EXPECT_EQ(aborted.Read(buffer, sizeof buffer), BytePipe::kAbort);
  EXPECT_TRUE(aborted.Push("late")) << "bytes nobody reads are taken and dropped";
}

}  // namespace
}  // namespace abx
