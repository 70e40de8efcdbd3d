#include "epp-shim/host_output.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#include <string>

#include "common/platform.h"
#include "epp-shim/shim_log.h"

namespace abx {

HostOutput::HostOutput(int fd) : fd_(fd) {
  struct stat st;
  if (fstat(fd, &st) != 0) return;
  if (S_ISSOCK(st.st_mode)) {
    mode_ = Mode::kSocket;
  } else if (S_ISFIFO(st.st_mode)) {
    // Fails (ENXIO) only when nobody reads the pipe any more; writes then fail too.
    const std::string path = "/proc/self/fd/" + std::to_string(fd);
    const int own = open(path.c_str(), O_WRONLY | O_NONBLOCK | O_CLOEXEC);
    if (own >= 0) {
      fd_ = own;
      owns_fd_ = true;
      mode_ = Mode::kNonBlocking;
    }
  }
}

HostOutput::~HostOutput() {
  if (owns_fd_) close(fd_);
}

ssize_t HostOutput::WriteSome(const char* data, size_t size) {
  for (;;) {
    const ssize_t wrote = mode_ == Mode::kSocket
                              ? send(fd_, data, size, MSG_DONTWAIT | MSG_NOSIGNAL)
                              : write(fd_, data, size);
    if (wrote >= 0) return wrote;
    if (errno == EINTR) continue;
    if (errno == EAGAIN) return 0;
    return -1;
  }
}

ssize_t HostOutput::WriteLineSome(std::string_view line) {
  static const char kNewline = '\n';
  for (;;) {
    ssize_t wrote;
    if (mode_ == Mode::kSocket) {
      iovec parts[2] = {{const_cast<char*>(line.data()), line.size()},
                        {const_cast<char*>(&kNewline), 1}};
      msghdr message{};
      message.msg_iov = parts;
      message.msg_iovlen = 2;
      wrote = sendmsg(fd_, &message, MSG_DONTWAIT | MSG_NOSIGNAL);
    } else {
      const iovec parts[2] = {{const_cast<char*>(line.data()), line.size()},
                              {const_cast<char*>(&kNewline), 1}};
      wrote = writev(fd_, parts, 2);
    }
    if (wrote >= 0) return wrote;
    if (errno == EINTR) continue;
    if (errno == EAGAIN) return 0;
    return -1;
  }
}

void HostOutput::Break() {
  broken_ = true;
  ShimLog(std::string("cannot write to stdout (") + strerror(errno) +
          "); later output is dropped");
  std::string().swap(pending_);
  pending_at_ = 0;
}

void HostOutput::WriteLine(std::string_view line) {
  if (broken_) return;
  size_t written = 0;
  if (pending_bytes() == 0) {
    const ssize_t wrote = WriteLineSome(line);
    if (wrote < 0) return Break();
    written = static_cast<size_t>(wrote);
    if (written == line.size() + 1) return;
    if (mode_ == Mode::kBlocking) {
      // A blocking descriptor took part of it (a signal, a full disk): write the rest.
      const bool ok = written < line.size()
                          ? WriteAll(fd_, line.data() + written, line.size() - written) &&
                                WriteAll(fd_, "\n", 1)
                          : WriteAll(fd_, "\n", 1);
      if (!ok) Break();
      return;
    }
  }
  if (written < line.size()) pending_.append(line.data() + written, line.size() - written);
  pending_.push_back('\n');
}

void HostOutput::Flush() {
  while (!broken_ && pending_bytes() > 0) {
    const ssize_t wrote = WriteSome(pending_.data() + pending_at_, pending_bytes());
    if (wrote < 0) return Break();
    if (wrote == 0) break;
    pending_at_ += static_cast<size_t>(wrote);
  }
  if (pending_at_ == pending_.size()) {
    // Keeps a buffer of ordinary size for next time; gives a big one back.
    if (pending_.capacity() > (4u << 20)) {
      std::string().swap(pending_);
    } else {
      pending_.clear();
    }
    pending_at_ = 0;
  } else if (pending_at_ > (1u << 20) && pending_at_ > pending_.size() / 2) {
    pending_.erase(0, pending_at_);
    pending_at_ = 0;
  }
}

bool HostOutput::FlushUntil(int64_t deadline_ms) {
  Flush();
  while (!broken_ && pending_bytes() > 0) {
    const int64_t remaining = deadline_ms - MonotonicMillis();
    if (remaining <= 0) return false;
    pollfd entry{fd_, POLLOUT, 0};
    if (poll(&entry, 1, static_cast<int>(remaining)) < 0 && errno != EINTR) return false;
    Flush();
  }
  return pending_bytes() == 0;
}

}  // namespace abx
