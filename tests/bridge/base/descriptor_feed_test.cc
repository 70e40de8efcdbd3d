// An upload's body read from a local file's descriptor on a thread of its own: exactly
// the size given, in order, through the bounded pipe; a file that shrank cuts the body.
#include "bridge/base/descriptor_feed.h"

#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>

#include <atomic>
#include <condition_variable>
#include <mutex>
#include <string>

#include <gtest/gtest.h>

namespace abx {
namespace {

// A file of `size` bytes (byte i is i * 7 mod 251), opened read-only and unlinked.
int MakeFile(size_t size) {
  char path[] = "/tmp/descriptor-feed-XXXXXX";
  const int fd = mkstemp(path);
  std::string bytes(size, '\0');
  for (size_t i = 0; i < size; ++i) bytes[i] = static_cast<char>(i * 7 % 251);
  EXPECT_EQ(write(fd, bytes.data(), bytes.size()), static_cast<ssize_t>(bytes.size()));
  const int reader = open(path, O_RDONLY | O_CLOEXEC);
  unlink(path);
  close(fd);
  return reader;
}

// Reads the whole body as the HTTP client's I/O thread would: on kWait, until resumed.
std::string Drain(BodySource* body, bool* aborted) {
  std::mutex mu;
  std::condition_variable cv;
  bool resumed = false;
  body->SetResume([&] {
    std::lock_guard<std::mutex> lock(mu);
    resumed = true;
    cv.notify_all();
  });
  std::string out;
  char buffer[100 * 1000];  // not a divisor of the feed's reads
  for (;;) {
    const size_t got = body->Read(buffer, sizeof buffer);
    if (got == 0) break;
    if (got == BodySource::kAbort) {
      *aborted = true;
      break;
    }
    if (got == BodySource::kWait) {
      std::unique_lock<std::mutex> lock(mu);
      cv.wait(lock, [&] { return resumed; });
      resumed = false;
      continue;
    }
    out.append(buffer, got);
  }
  body->SetResume(nullptr);
  return out;
}

TEST(DescriptorFeedTest, SendsExactlyTheSizeInOrder) {
  constexpr size_t kSize = (5 << 20) + 12345;  // several pipe-fulls
  const int fd = MakeFile(kSize + 1000);       // a file that grew: cut at kSize
  std::atomic<int64_t> progressed{0};
  DescriptorFeed feed(fd, kSize, [&](int64_t bytes) { progressed = bytes; });
  feed.Start();
  bool aborted = false;
  const std::string body = Drain(feed.body().get(), &aborted);
  EXPECT_FALSE(aborted);
  ASSERT_EQ(body.size(), kSize);
  for (size_t i = 0; i < kSize; ++i) {
    ASSERT_EQ(body[i], static_cast<char>(i * 7 % 251)) << "byte " << i;
  }
  EXPECT_TRUE(feed.Finish().ok());
  EXPECT_EQ(progressed.load(), static_cast<int64_t>(kSize));
}

TEST(DescriptorFeedTest, AFileThatShrankCutsTheBody) {
  const int fd = MakeFile(1000);
  DescriptorFeed feed(fd, 5000, nullptr);
  feed.Start();
  bool aborted = false;
  Drain(feed.body().get(), &aborted);
  EXPECT_TRUE(aborted);
  Status read = feed.Finish();
  ASSERT_FALSE(read.ok());
  EXPECT_EQ(read.error().field, "local_path");
  EXPECT_NE(read.error().message.find("shrank"), std::string::npos) << read.error().message;
}

TEST(DescriptorFeedTest, FinishStopsAReaderThatNobodyDrains) {
  const int fd = MakeFile(4 << 20);
  DescriptorFeed feed(fd, 4 << 20, nullptr);
  feed.Start();
  // The pipe fills (1 MiB) and the thread waits for room that never comes.
  EXPECT_TRUE(feed.Finish().ok());
}

}  // namespace
}  // namespace abx
