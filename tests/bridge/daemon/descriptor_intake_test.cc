// One hand-over on the descriptor socket: a token and exactly one descriptor, or a
// refusal that closes whatever came.
#include "bridge/daemon/descriptor_intake.h"

#include <fcntl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <string>
#include <vector>

#include <gtest/gtest.h>

namespace abx::daemon {
namespace {

bool IsOpen(int fd) { return fcntl(fd, F_GETFD) != -1; }

// Sends `token` with `fds` beside it on one end of a socket pair, then closes that end;
// returns the other end (non-blocking, as accepted connections are).
int HandOver(const std::string& token, const std::vector<int>& fds) {
  int pair[2];
  EXPECT_EQ(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, pair), 0);
  iovec io{const_cast<char*>(token.data()), token.size()};
  msghdr message{};
  message.msg_iov = &io;
  message.msg_iovlen = 1;
  std::vector<char> control(CMSG_SPACE(sizeof(int) * fds.size()));
  if (!fds.empty()) {
    message.msg_control = control.data();
    message.msg_controllen = control.size();
    cmsghdr* header = CMSG_FIRSTHDR(&message);
    header->cmsg_level = SOL_SOCKET;
    header->cmsg_type = SCM_RIGHTS;
    header->cmsg_len = CMSG_LEN(sizeof(int) * fds.size());
    memcpy(CMSG_DATA(header), fds.data(), sizeof(int) * fds.size());
  }
  if (!token.empty() || !fds.empty()) {
    EXPECT_GE(sendmsg(pair[0], &message, 0), 0);
  }
  close(pair[0]);
  fcntl(pair[1], F_SETFL, O_NONBLOCK);
  return pair[1];
}

TEST(DescriptorIntakeTest, ATokenAndOneDescriptor) {
  const int file = open("/dev/null", O_RDONLY | O_CLOEXEC);
  const int connection = HandOver("0123456789abcdef0123456789abcdef", {file});
  close(file);  // the copy in flight stays open
  std::string token, error;
  int fd = -1;
  ASSERT_TRUE(ReceiveDescriptor(connection, 1000, &token, &fd, &error)) << error;
  EXPECT_EQ(token, "0123456789abcdef0123456789abcdef");
  EXPECT_TRUE(IsOpen(fd));
  EXPECT_TRUE(fcntl(fd, F_GETFD) & FD_CLOEXEC);
  close(fd);
  close(connection);
}

TEST(DescriptorIntakeTest, RefusalsCloseWhatCame) {
  const int a = open("/dev/null", O_RDONLY | O_CLOEXEC);
  const int b = open("/dev/null", O_RDONLY | O_CLOEXEC);
  struct Case {
    std::string token;
    std::vector<int> fds;
  };
  for (const Case& c : {Case{"tok", {}}, Case{"tok", {a, b}}, Case{"", {a}}, Case{std::string(300, 't'), {a}}}) {
    const int connection = HandOver(c.token, c.fds);
    std::string token, error;
    int fd = -1;
    EXPECT_FALSE(ReceiveDescriptor(connection, 1000, &token, &fd, &error)) << c.token.size() << " " << c.fds.size();
    EXPECT_FALSE(error.empty());
    EXPECT_EQ(fd, -1);
    close(connection);
  }
  close(a);
  close(b);
}

TEST(DescriptorIntakeTest, APeerThatSendsNothingTimesOut) {
  int pair[2];
  ASSERT_EQ(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0, pair), 0);
  std::string token, error;
  int fd = -1;
  EXPECT_FALSE(ReceiveDescriptor(pair[1], 100, &token, &fd, &error));
  EXPECT_NE(error.find("in time"), std::string::npos) << error;
  close(pair[0]);
  close(pair[1]);
}

}  // namespace
}  // namespace abx::daemon
