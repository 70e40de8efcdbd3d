// The bridge's listening socket as the daemon runs it: AcceptLoop on its own thread
// hands over connections arriving from many clients at once, each with its peer's uid and
// pid, and Close from another thread (the daemon's main thread, draining) ends the loop
// and removes the path. No gRPC, so ThreadSanitizer judges it (tools/sanitizers).

#include "bridge/daemon/unix_listener.h"

#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "tests/common/temp_dir.h"

namespace abx::daemon {
namespace {

// Connects to `path`; -1 when refused or absent.
int Connect(const std::string& path) {
  int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::strncpy(addr.sun_path, path.c_str(), sizeof addr.sun_path - 1);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    ::close(fd);
    return -1;
  }
  return fd;
}

// One byte from `fd` within 10 s; -1 when none came.
int ReadByte(int fd) {
  pollfd p{fd, POLLIN, 0};
  char byte = 0;
  if (::poll(&p, 1, 10000) != 1 || ::read(fd, &byte, 1) != 1) return -1;
  return static_cast<unsigned char>(byte);
}

TEST(UnixListenerTest, ManyClientsAtOnceThenCloseFromAnotherThread) {
  testing::TempDir dir("abxul");
  ASSERT_FALSE(dir.path().empty());
  const std::string path = dir.path() + "/bridge.sock";
  std::string error;
  std::unique_ptr<UnixListener> listener = UnixListener::Bind(path, &error);
  ASSERT_NE(listener, nullptr) << error;
  struct stat st {};
  ASSERT_EQ(::stat(path.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);

  struct Accepted {
    unsigned uid;
    int pid;
  };
  std::mutex mu;
  std::vector<Accepted> accepted;
  std::thread acceptor([&] {
    listener->AcceptLoop([&](int fd, unsigned uid, int pid) {
      {
        std::lock_guard<std::mutex> lock(mu);
        accepted.push_back({uid, pid});
      }
      const char byte = 'k';  // proves to the client that this very connection got through
      EXPECT_EQ(::write(fd, &byte, 1), 1);
      ::close(fd);
    });
  });

  constexpr int kClients = 12, kConnectionsEach = 15;
  std::vector<std::thread> clients;
  for (int c = 0; c < kClients; ++c) {
    clients.emplace_back([&] {
      for (int n = 0; n < kConnectionsEach; ++n) {
        const int fd = Connect(path);
        ASSERT_GE(fd, 0) << "connect: " << std::strerror(errno);
        EXPECT_EQ(ReadByte(fd), 'k');
        ::close(fd);
      }
    });
  }
  for (std::thread& t : clients) t.join();

  std::thread closer([&] { listener->Close(); });
  closer.join();
  acceptor.join();  // would hang if Close did not end the loop
  EXPECT_NE(::access(path.c_str(), F_OK), 0) << "the socket path is still there";
  EXPECT_EQ(Connect(path), -1);
  {
    std::lock_guard<std::mutex> lock(mu);
    ASSERT_EQ(accepted.size(), static_cast<size_t>(kClients * kConnectionsEach));
    for (const Accepted& a : accepted) {
      EXPECT_EQ(a.uid, ::geteuid());
      EXPECT_EQ(a.pid, ::getpid());
    }
  }
  listener.reset();
}

}  // namespace
}  // namespace abx::daemon
