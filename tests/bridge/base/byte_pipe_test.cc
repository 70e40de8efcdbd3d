// BytePipe: bytes pushed on one thread come out in order on another; a full pipe tells
// its producer to wait and calls it back once half is taken; a reader with nothing
// ready waits and is resumed; End and Abort reach a waiting reader.

#include "bridge/base/byte_pipe.h"

#include <algorithm>
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
  auto byte_at = [](size_t pos) { return static_cast<char>((pos ^ (pos >> 8) ^ (pos >> 16)) & 0xff); };
  std::atomic<size_t> max_ahead{0};
  std::thread producer([&] {
    for (size_t i = 0; i < kChunks; ++i) {
      {
        std::unique_lock<std::mutex> lock(mu);
        cv.wait(lock, [&] { return room; });
        room = false;  // until Push says there is room, or on_room does
      }
      std::string chunk(kChunkBytes, '\0');
      for (size_t j = 0; j < kChunkBytes; ++j) chunk[j] = byte_at(i * kChunkBytes + j);
      if (pipe.Push(std::move(chunk))) {
        std::lock_guard<std::mutex> lock(mu);
        room = true;
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
  for (size_t pos = 0; pos < got.size(); ++pos) ASSERT_EQ(got[pos], byte_at(pos)) << "at " << pos;
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
