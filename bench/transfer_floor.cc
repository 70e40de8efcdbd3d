#include "bench/transfer_floor.h"

#include <fcntl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <string>
#include <thread>
#include <vector>

#include "bench/clock.h"

namespace abx::bench {

double TransferMs(size_t bytes, int pipe_bytes, int rounds) {
  int fds[2];
  const bool made = pipe_bytes < 0 ? socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds) == 0
                                   : pipe2(fds, O_CLOEXEC) == 0;
  if (!made || rounds < 1) return -1;
  if (pipe_bytes > 0) fcntl(fds[1], F_SETPIPE_SZ, pipe_bytes);
  // The reader counts bytes and says when each line has arrived whole.
  std::atomic<size_t> received{0};
  std::thread reader([&] {
    std::vector<char> buffer(256 << 10);
    for (;;) {
      const ssize_t got = read(fds[0], buffer.data(), buffer.size());
      if (got <= 0) return;
      received += static_cast<size_t>(got);
    }
  });
  const std::string line(bytes, 'A');
  std::vector<double> ms;
  bool failed = false;
  for (int r = 0; r < rounds && !failed; ++r) {
    const size_t target = received.load() + bytes;
    Stopwatch t;
    for (size_t at = 0; at < bytes && !failed;) {
      const ssize_t wrote = write(fds[1], line.data() + at, bytes - at);
      failed = wrote <= 0;
      if (!failed) at += static_cast<size_t>(wrote);
    }
    while (!failed && received.load() < target) std::this_thread::yield();
    ms.push_back(t.ElapsedMs());
  }
  close(fds[1]);
  reader.join();
  close(fds[0]);
  if (failed) return -1;
  std::sort(ms.begin(), ms.end());
  return ms[ms.size() / 2];
}

}  // namespace abx::bench
