#include "tests/fake-opensandbox/sandbox_port_relay.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sched.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <mutex>
#include <thread>
#include <vector>

namespace fake_opensandbox {
namespace {

constexpr size_t kBufferBytes = 256 * 1024;

sockaddr_in Loopback(int port) {
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(static_cast<uint16_t>(port));
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  return address;
}

void SetNonBlocking(int fd) { ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) | O_NONBLOCK); }

// One direction of a joined pair: what was read from `from` and not yet written to `to`.
struct Pipe {
  int from = -1, to = -1;
  std::vector<char> buffer = std::vector<char>(kBufferBytes);
  size_t start = 0, end = 0;
  bool source_done = false;  // `from` reached its end (or failed)
  bool closed = false;       // everything written and `to` shut for writing

  bool Empty() const { return start == end; }
};

// Moves what it can for `pipe` after poll said its fds are ready; false on a hard error.
bool Step(Pipe& pipe, short from_events, short to_events) {
  if (!pipe.source_done && pipe.Empty() && (from_events & (POLLIN | POLLHUP | POLLERR))) {
    ssize_t n = ::read(pipe.from, pipe.buffer.data(), pipe.buffer.size());
    if (n > 0) {
      pipe.start = 0;
      pipe.end = static_cast<size_t>(n);
    } else if (n == 0 || (errno != EAGAIN && errno != EINTR)) {
      pipe.source_done = true;
    }
  }
  if (!pipe.Empty() && (to_events & (POLLOUT | POLLERR | POLLHUP))) {
    ssize_t n = ::write(pipe.to, pipe.buffer.data() + pipe.start, pipe.end - pipe.start);
    if (n > 0) {
      pipe.start += static_cast<size_t>(n);
    } else if (n < 0 && errno != EAGAIN && errno != EINTR) {
      return false;
    }
  }
  if (pipe.source_done && pipe.Empty() && !pipe.closed) {
    ::shutdown(pipe.to, SHUT_WR);
    pipe.closed = true;
  }
  return true;
}

// Joins `a` and `b` until both directions ended, one failed, or `stop_fd` is readable.
void Join(int a, int b, int stop_fd) {
  SetNonBlocking(a);
  SetNonBlocking(b);
  Pipe up{a, b}, down{b, a};
  while (!(up.closed && down.closed)) {
    pollfd fds[3] = {{a, 0, 0}, {b, 0, 0}, {stop_fd, POLLIN, 0}};
    if (!up.source_done && up.Empty()) fds[0].events |= POLLIN;
    if (!down.source_done && down.Empty()) fds[1].events |= POLLIN;
    if (!up.Empty()) fds[1].events |= POLLOUT;
    if (!down.Empty()) fds[0].events |= POLLOUT;
    if (::poll(fds, 3, -1) < 0) {
      if (errno == EINTR) continue;
      return;
    }
    if (fds[2].revents) return;
    if (!Step(up, fds[0].revents, fds[1].revents) || !Step(down, fds[1].revents, fds[0].revents)) {
      return;
    }
  }
}

}  // namespace

int DialInNamespace(int netns_fd, int port, std::string* error) {
  // A socket belongs to the network namespace of the thread that made it: make it on a
  // short-lived thread that enters the sandbox's, and connect from here.
  int fd = -1;
  int failure = 0;
  std::thread([&] {
    if (::setns(netns_fd, CLONE_NEWNET) != 0) {
      failure = errno;
      return;
    }
    fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) failure = errno;
  }).join();
  if (fd < 0) {
    *error = std::string("socket in the sandbox's network: ") + std::strerror(failure);
    return -1;
  }
  sockaddr_in address = Loopback(port);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0) {
    *error = "connect to port " + std::to_string(port) + " in the sandbox: " + std::strerror(errno);
    ::close(fd);
    return -1;
  }
  return fd;
}

namespace {

// A connection to 127.0.0.1:`port` of the host; -1 when refused.
int DialHost(int port) {
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  sockaddr_in address = Loopback(port);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0) {
    ::close(fd);
    return -1;
  }
  return fd;
}

}  // namespace

struct SandboxPortRelay::State {
  int listen_fd = -1;
  int stop_fd = -1;  // an eventfd: readable once the relay stops
  int netns_fd = -1;
  int target_port = 0;
  bool inward = false;  // listening inside the sandbox, dialling the host
  std::atomic<uint64_t>* accepted = nullptr;
  std::thread acceptor;
  std::mutex mutex;
  std::condition_variable idle;
  int live = 0;  // joined connections whose thread still runs

  ~State() {
    if (listen_fd >= 0) ::close(listen_fd);
    if (stop_fd >= 0) ::close(stop_fd);
  }
};

std::unique_ptr<SandboxPortRelay> SandboxPortRelay::Start(int netns_fd, int target_port,
                                                          std::atomic<uint64_t>* accepted,
                                                          std::string* error) {
  auto state = std::make_shared<State>();
  state->netns_fd = netns_fd;
  state->target_port = target_port;
  state->accepted = accepted;
  state->listen_fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in address = Loopback(0);
  if (state->listen_fd < 0 || ::bind(state->listen_fd, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0) {
    *error = std::string("relay listener: ") + std::strerror(errno);
    return nullptr;
  }
  return Run(std::move(state), error);
}

std::unique_ptr<SandboxPortRelay> SandboxPortRelay::StartInward(int netns_fd, int inside_port, int host_port,
                                                                std::string* error) {
  auto state = std::make_shared<State>();
  state->netns_fd = netns_fd;
  state->target_port = host_port;
  state->inward = true;
  int failure = 0;
  // bubblewrap brings the sandbox's loopback up just after it made the namespace: until
  // then 127.0.0.1 cannot be bound there (EADDRNOTAVAIL), so that is tried again a while.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  do {
    if (failure == EADDRNOTAVAIL) std::this_thread::sleep_for(std::chrono::milliseconds(5));
    failure = 0;
    // Made and bound on a thread that enters the sandbox's network (DialInNamespace).
    std::thread([&] {
      if (::setns(netns_fd, CLONE_NEWNET) != 0) {
        failure = errno;
        return;
      }
      state->listen_fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
      sockaddr_in address = Loopback(inside_port);
      const int one = 1;
      if (state->listen_fd < 0 ||
          ::setsockopt(state->listen_fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one) != 0 ||
          ::bind(state->listen_fd, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0) {
        failure = errno;
        if (state->listen_fd >= 0) ::close(state->listen_fd);
        state->listen_fd = -1;
      }
    }).join();
  } while (failure == EADDRNOTAVAIL && std::chrono::steady_clock::now() < deadline);
  if (failure != 0) {
    *error = "listener at port " + std::to_string(inside_port) + " in the sandbox: " + std::strerror(failure);
    return nullptr;
  }
  return Run(std::move(state), error);
}

std::unique_ptr<SandboxPortRelay> SandboxPortRelay::Run(std::shared_ptr<State> state, std::string* error) {
  state->stop_fd = ::eventfd(0, EFD_CLOEXEC);
  sockaddr_in address{};
  socklen_t length = sizeof address;
  if (state->stop_fd < 0 || ::listen(state->listen_fd, 512) != 0 ||
      ::getsockname(state->listen_fd, reinterpret_cast<sockaddr*>(&address), &length) != 0) {
    *error = std::string("relay listener: ") + std::strerror(errno);
    return nullptr;
  }
  std::unique_ptr<SandboxPortRelay> relay(new SandboxPortRelay());
  relay->port_ = ntohs(address.sin_port);
  relay->state_ = state;
  state->acceptor = std::thread([state] {
    while (true) {
      pollfd fds[2] = {{state->listen_fd, POLLIN, 0}, {state->stop_fd, POLLIN, 0}};
      if (::poll(fds, 2, -1) < 0 && errno != EINTR) return;
      if (fds[1].revents) return;
      if (!(fds[0].revents & POLLIN)) continue;
      int client = ::accept4(state->listen_fd, nullptr, nullptr, SOCK_CLOEXEC);
      if (client < 0) continue;
      if (state->accepted) state->accepted->fetch_add(1);
      {
        std::lock_guard<std::mutex> lock(state->mutex);
        ++state->live;
      }
      std::thread([state, client] {
        std::string ignored;
        int upstream = state->inward ? DialHost(state->target_port)
                                     : DialInNamespace(state->netns_fd, state->target_port, &ignored);
        if (upstream >= 0) {
          // Each side's writes go out as they come, as through Docker's port mapping (a
          // DNAT rule, or docker-proxy, whose Go sockets have Nagle off): a relay that
          // held back a request's second segment until the first's delayed ACK would add
          // 40 ms to every call that is sent in two writes.
          const int one = 1;
          ::setsockopt(client, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
          ::setsockopt(upstream, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
          Join(client, upstream, state->stop_fd);
          ::close(upstream);
        }
        ::close(client);
        std::lock_guard<std::mutex> lock(state->mutex);
        if (--state->live == 0) state->idle.notify_all();
      }).detach();
    }
  });
  return relay;
}

SandboxPortRelay::~SandboxPortRelay() {
  uint64_t one = 1;
  (void)::write(state_->stop_fd, &one, sizeof one);
  if (state_->acceptor.joinable()) state_->acceptor.join();
  std::unique_lock<std::mutex> lock(state_->mutex);
  state_->idle.wait(lock, [this] { return state_->live == 0; });
}

}  // namespace fake_opensandbox
