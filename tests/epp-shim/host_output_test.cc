#include "epp-shim/host_output.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <string>
#include <vector>

#include "common/platform.h"
#include "gtest/gtest.h"

namespace abx {
namespace {

// Reads everything available from `fd` until `size` bytes arrived or 5 s passed.
std::string ReadUpTo(int fd, size_t size) {
  std::string got;
  char buffer[65536];
  const int64_t deadline = MonotonicMillis() + 5000;
  while (got.size() < size && MonotonicMillis() < deadline) {
    pollfd entry{fd, POLLIN, 0};
    if (poll(&entry, 1, 50) <= 0) continue;
    const ssize_t n = read(fd, buffer, sizeof buffer);
    if (n <= 0) break;
    got.append(buffer, static_cast<size_t>(n));
  }
  return got;
}

// Lines of many sizes, more than a pipe holds, written while nobody reads: nothing
// blocks, what does not fit waits, and it all arrives in order once the reader reads.
void WritesWithoutBlockingInOrder(int write_fd, int read_fd) {
  HostOutput output(write_fd);
  std::string expected;
  for (int i = 0; i < 400; ++i) {
    const std::string line = std::to_string(i) + ":" + std::string((i * 7919) % 150000, 'a' + i % 26);
    output.WriteLine(line);  // would block a blocking writer long before the end
    expected += line + "\n";
  }
  EXPECT_GT(output.pending_bytes(), 0u);
  EXPECT_LT(output.pending_bytes(), expected.size());
  std::string got;
  while (got.size() < expected.size()) {
    const std::string chunk = ReadUpTo(read_fd, 1);
    ASSERT_FALSE(chunk.empty()) << "stalled after " << got.size() << " bytes";
    got += chunk;
    output.Flush();
  }
  EXPECT_EQ(output.pending_bytes(), 0u);
  EXPECT_TRUE(got == expected);
}

TEST(HostOutputTest, PipeIsWrittenWithoutBlocking) {
  int fds[2];
  ASSERT_EQ(pipe2(fds, O_CLOEXEC), 0);
  WritesWithoutBlockingInOrder(fds[1], fds[0]);
  // The host's own description of the pipe was left blocking.
  EXPECT_EQ(fcntl(fds[1], F_GETFL) & O_NONBLOCK, 0);
  close(fds[0]);
  close(fds[1]);
}

TEST(HostOutputTest, SocketIsWrittenWithoutBlocking) {
  int fds[2];
  ASSERT_EQ(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds), 0);
  WritesWithoutBlockingInOrder(fds[1], fds[0]);
  EXPECT_EQ(fcntl(fds[1], F_GETFL) & O_NONBLOCK, 0);
  close(fds[0]);
  close(fds[1]);
}

TEST(HostOutputTest, FlushUntilWaitsForTheReaderOrTheDeadline) {
  int fds[2];
  ASSERT_EQ(pipe2(fds, O_CLOEXEC), 0);
  HostOutput output(fds[1]);
  output.WriteLine(std::string(1 << 20, 'x'));
  const int64_t start = MonotonicMillis();
  EXPECT_FALSE(output.FlushUntil(start + 200));
  EXPECT_GE(MonotonicMillis() - start, 190);
  EXPECT_GT(output.pending_bytes(), 0u);
  close(fds[0]);
  close(fds[1]);
}

TEST(HostOutputTest, GoneReaderDropsLaterOutput) {
  signal(SIGPIPE, SIG_IGN);
  int fds[2];
  ASSERT_EQ(pipe2(fds, O_CLOEXEC), 0);
  HostOutput output(fds[1]);
  output.WriteLine(std::string(200000, 'x'));  // some of it waits
  close(fds[0]);
  output.Flush();
  output.WriteLine("after");
  EXPECT_TRUE(output.broken());
  EXPECT_EQ(output.pending_bytes(), 0u);
  close(fds[1]);
}

}  // namespace
}  // namespace abx
