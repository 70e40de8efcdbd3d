#include "bridge/daemon/pool_salt.h"

#include <fcntl.h>
#include <sys/random.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace abx {
namespace {

constexpr size_t kSaltBytes = 16;
constexpr char kFileName[] = "pool-salt";

// "" when the kernel gives no randomness (then nothing is kept).
std::string RandomSalt() {
  unsigned char bytes[kSaltBytes];
  size_t got = 0;
  while (got < sizeof bytes) {
    const ssize_t n = getrandom(bytes + got, sizeof bytes - got, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return "";
    got += static_cast<size_t>(n);
  }
  static const char kHex[] = "0123456789abcdef";
  std::string out;
  for (unsigned char b : bytes) {
    out += kHex[b >> 4];
    out += kHex[b & 15];
  }
  return out;
}

bool IsSalt(const std::string& text) {
  if (text.size() != 2 * kSaltBytes) return false;
  for (char c : text) {
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  }
  return true;
}

// The salt in `path`; "" when it cannot be read or is not one.
std::string ReadSalt(const std::string& path) {
  const int fd = open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) return "";
  char buffer[2 * kSaltBytes + 1];
  const ssize_t n = read(fd, buffer, sizeof buffer);
  close(fd);
  std::string text = n > 0 ? std::string(buffer, static_cast<size_t>(n)) : "";
  return IsSalt(text) ? text : "";
}

}  // namespace

std::string LoadOrCreatePoolSalt(const std::string& dir, std::string* error) {
  const std::string path = dir + "/" + kFileName;
  if (std::string salt = ReadSalt(path); !salt.empty()) return salt;
  const std::string salt = RandomSalt();
  if (salt.empty()) {
    // No randomness: a salt of the process's own, guessable, never kept.
    *error = std::string("no random bytes (") + std::strerror(errno) + "); this daemon's pool will not be adopted by the next";
    return "pid-" + std::to_string(getpid());
  }
  // Written under a name of this process's own, then linked into place: link() fails
  // when the name exists, so a reader never sees half a salt and two daemons agree.
  const std::string temporary = path + "." + std::to_string(getpid()) + "." + RandomSalt().substr(0, 8);
  const int fd = open(temporary.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600);
  bool written = fd >= 0 && write(fd, salt.data(), salt.size()) == static_cast<ssize_t>(salt.size());
  if (fd >= 0) {
    written = written && fsync(fd) == 0;  // whole on disk before it has its name
    written = close(fd) == 0 && written;
  }
  bool linked = written && link(temporary.c_str(), path.c_str()) == 0;
  int link_errno = errno;
  if (!linked && written && link_errno == EEXIST && ReadSalt(path).empty()) {
    // There, but not a salt (a crash before the data reached the disk, a stray edit):
    // replaced, or every daemon from now on would have one of its own.
    linked = rename(temporary.c_str(), path.c_str()) == 0;
    link_errno = errno;
  }
  unlink(temporary.c_str());
  if (std::string existing = ReadSalt(path); !existing.empty()) return existing;  // ours, or another daemon's
  *error = path + ": " + (written ? std::strerror(link_errno) : "cannot be written") +
           "; this daemon's pool will not be adopted by the next";
  return salt;
}

}  // namespace abx
