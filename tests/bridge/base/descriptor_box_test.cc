// The box of descriptors handed over beside gRPC: only expected tokens are kept, a
// waiter gets its descriptor or gives up, and nothing leaks.
#include "bridge/base/descriptor_box.h"

#include <fcntl.h>
#include <unistd.h>

#include <thread>

#include <gtest/gtest.h>

namespace abx {
namespace {

using std::chrono::milliseconds;

bool IsOpen(int fd) { return fcntl(fd, F_GETFD) != -1; }

int OpenSomething() { return open("/dev/null", O_RDONLY | O_CLOEXEC); }

TEST(DescriptorBoxTest, AnExpectedTokenGetsItsDescriptor) {
  DescriptorBox box;
  CancelToken cancel;
  box.Expect("t1");
  const int fd = OpenSomething();
  std::thread later([&] {
    std::this_thread::sleep_for(milliseconds(50));
    EXPECT_TRUE(box.Deliver("t1", fd));
  });
  EXPECT_EQ(box.Take("t1", milliseconds(5000), &cancel), fd);
  later.join();
  EXPECT_TRUE(IsOpen(fd));
  close(fd);
  // Taken once: the token is gone.
  const int again = OpenSomething();
  EXPECT_FALSE(box.Deliver("t1", again));
  EXPECT_FALSE(IsOpen(again));
}

TEST(DescriptorBoxTest, UnexpectedAndSecondDescriptorsAreClosed) {
  DescriptorBox box;
  const int stranger = OpenSomething();
  EXPECT_FALSE(box.Deliver("nobody-asked", stranger));
  EXPECT_FALSE(IsOpen(stranger));
  box.Expect("t");
  const int first = OpenSomething();
  EXPECT_TRUE(box.Deliver("t", first));
  const int second = OpenSomething();
  EXPECT_FALSE(box.Deliver("t", second));
  EXPECT_FALSE(IsOpen(second));
  box.Forget("t");
  EXPECT_FALSE(IsOpen(first)) << "forgotten with its descriptor";
}

TEST(DescriptorBoxTest, TakeGivesUpOnTimeoutAndOnCancel) {
  DescriptorBox box;
  CancelToken cancel;
  box.Expect("slow");
  EXPECT_EQ(box.Take("slow", milliseconds(30), &cancel), -1);
  const int late = OpenSomething();
  EXPECT_FALSE(box.Deliver("slow", late)) << "a token given up on is forgotten";

  box.Expect("cancelled");
  std::thread canceller([&] {
    std::this_thread::sleep_for(milliseconds(50));
    cancel.Cancel();
  });
  const auto start = std::chrono::steady_clock::now();
  EXPECT_EQ(box.Take("cancelled", milliseconds(10000), &cancel), -1);
  EXPECT_LT(std::chrono::steady_clock::now() - start, milliseconds(5000));
  canceller.join();
}

TEST(DescriptorBoxTest, TheBoxClosesWhatWasNeverTaken) {
  const int fd = OpenSomething();
  {
    DescriptorBox box;
    box.Expect("t");
    ASSERT_TRUE(box.Deliver("t", fd));
  }
  EXPECT_FALSE(IsOpen(fd));
}

}  // namespace
}  // namespace abx
