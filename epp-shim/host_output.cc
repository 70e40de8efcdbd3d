#include "epp-shim/host_output.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <string>

#include "common/platform.h"
#include "epp-shim/shim_log.h"

namespace abx {
namespace {

constexpr int kPipeBytes = 256 << 10;

}  // namespace

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
      // A 64 KiB pipe is full after one exec.output message: most of a stream then went
      // through the shim's buffer (a copy, and a poll round per message). 256 KiB took
      // the shim's CPU per 256 MiB streamed from 0.21-0.31 s to 0.18-0.23 s and its
      // peak RSS down (tools/bench, alternating runs); 1 MiB did no better, and counts
      // four times as much against the user's pipe-pages soft limit (16384 pages by
      // default: 64 shims at 1 MiB would reach it, and new pipes of that user would
      // then get two pages). The kernel fills the buffer only as needed. Failure (a
      // limit lower than that) leaves the pipe as it was.
      fcntl(own, F_SETPIPE_SZ, kPipeBytes);
    }
  }
}

HostOutput::~HostOutput() {
  if (owns_fd_) close(fd_);
}

ssize_t HostOutput::WriteSome(const iovec* parts, int count) {
  for (;;) {
    ssize_t wrote;
    if (mode_ == Mode::kSocket) {
      msghdr message{};
      message.msg_iov = const_cast<iovec*>(parts);
      message.msg_iovlen = static_cast<size_t>(count);
      wrote = sendmsg(fd_, &message, MSG_DONTWAIT | MSG_NOSIGNAL);
    } else {
      wrote = writev(fd_, parts, count);
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
  pending_.clear();
  spare_.clear();
  pending_bytes_ = 0;
}

void HostOutput::Append(const char* data, size_t size) {
  pending_bytes_ += size;
  while (size > 0) {
    if (pending_.empty() || pending_.back().end == kBlockBytes) {
      if (spare_.empty()) {
        pending_.emplace_back();
      } else {
        pending_.push_back(std::move(spare_.back()));
        spare_.pop_back();
      }
    }
    Block& block = pending_.back();
    const size_t take = std::min(size, kBlockBytes - block.end);
    memcpy(block.data.get() + block.end, data, take);
    block.end += take;
    data += take;
    size -= take;
  }
}

void HostOutput::WriteLine(std::string_view line) {
  if (broken_) return;
  static const char kNewline = '\n';
  size_t written = 0;
  if (pending_bytes_ == 0) {
    const iovec parts[2] = {{const_cast<char*>(line.data()), line.size()},
                            {const_cast<char*>(&kNewline), 1}};
    const ssize_t wrote = WriteSome(parts, 2);
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
  if (written < line.size()) Append(line.data() + written, line.size() - written);
  Append(&kNewline, 1);
}

void HostOutput::Flush() {
  constexpr int kMaxParts = 16;
  while (!broken_ && pending_bytes_ > 0) {
    iovec parts[kMaxParts];
    int count = 0;
    for (auto block = pending_.begin(); block != pending_.end() && count < kMaxParts; ++block) {
      parts[count++] = {block->data.get() + block->begin, block->end - block->begin};
    }
    const ssize_t wrote = WriteSome(parts, count);
    if (wrote < 0) return Break();
    if (wrote == 0) return;
    size_t left = static_cast<size_t>(wrote);
    pending_bytes_ -= left;
    while (left > 0) {
      Block& front = pending_.front();
      const size_t take = std::min(left, front.end - front.begin);
      front.begin += take;
      left -= take;
      if (front.begin == front.end) {
        front.begin = front.end = 0;
        if (spare_.size() < kSpareBlocks) spare_.push_back(std::move(front));
        pending_.pop_front();
      }
    }
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
