#include "bridge/daemon/descriptor_intake.h"

#include <errno.h>
#include <poll.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <vector>

namespace abx::daemon {
namespace {

// A token is 32 hex characters; anything much longer is not a shim's.
constexpr size_t kMaxTokenBytes = 128;
// Room for a few descriptors, so that a peer sending more is seen (and refused).
constexpr size_t kMaxDescriptors = 4;

}  // namespace

std::string DescriptorSocketPathFor(const std::string& socket_path) { return socket_path + ".fd"; }

bool ReceiveDescriptor(int connection, int timeout_ms, std::string* token, int* fd, std::string* error) {
  std::vector<int> received;
  token->clear();
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  bool ended = false;
  while (!ended && token->size() <= kMaxTokenBytes) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) break;
    pollfd entry{connection, POLLIN, 0};
    if (poll(&entry, 1, static_cast<int>(left.count())) <= 0) continue;
    char bytes[kMaxTokenBytes + 1];
    alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int) * kMaxDescriptors)];
    iovec io{bytes, sizeof bytes};
    msghdr message{};
    message.msg_iov = &io;
    message.msg_iovlen = 1;
    message.msg_control = control;
    message.msg_controllen = sizeof control;
    const ssize_t got = recvmsg(connection, &message, MSG_CMSG_CLOEXEC);
    if (got < 0 && (errno == EINTR || errno == EAGAIN)) continue;
    if (got < 0) {
      *error = std::string("recvmsg: ") + strerror(errno);
      break;
    }
    for (cmsghdr* c = CMSG_FIRSTHDR(&message); c != nullptr; c = CMSG_NXTHDR(&message, c)) {
      if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS) continue;
      const size_t count = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
      for (size_t i = 0; i < count; ++i) {
        int one;
        memcpy(&one, CMSG_DATA(c) + i * sizeof(int), sizeof one);
        received.push_back(one);
      }
    }
    if (message.msg_flags & MSG_CTRUNC) *error = "more descriptors than one";
    if (got == 0) ended = true;
    token->append(bytes, static_cast<size_t>(got));
  }
  const bool ok = error->empty() && ended && received.size() == 1 && !token->empty() &&
                  token->size() <= kMaxTokenBytes;
  if (ok) {
    *fd = received[0];
    return true;
  }
  for (int one : received) close(one);
  if (error->empty()) {
    *error = !ended ? "no complete hand-over in time"
             : received.size() != 1 ? std::to_string(received.size()) + " descriptors instead of one"
                                    : "a hand-over without a token";
  }
  return false;
}

}  // namespace abx::daemon
