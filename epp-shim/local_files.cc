#include "epp-shim/local_files.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/random.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include <utility>

namespace abx {
namespace {

// A new file's name keeps at most this much of the target's, so it stays within NAME_MAX.
constexpr size_t kTempNameKeep = 200;

mode_t CurrentUmask() {
  const mode_t mask = umask(0);
  umask(mask);
  return mask;
}

LocalFileReplyMessage Failed(const std::string& token, int error_number, const std::string& what) {
  LocalFileReplyMessage reply;
  reply.token = token;
  const char* name = strerrorname_np(error_number);
  reply.errno_name = name != nullptr ? name : "EIO";
  reply.message = what + ": " + strerror(error_number);
  return reply;
}

std::string RandomSuffix() {
  unsigned char bytes[8] = {};
  if (getrandom(bytes, sizeof bytes, 0) != static_cast<ssize_t>(sizeof bytes)) {
    // Uniqueness, not secrecy: O_EXCL refuses a clash anyway.
    const uint64_t fallback = static_cast<uint64_t>(getpid()) << 32 ^ static_cast<uint64_t>(time(nullptr));
    memcpy(bytes, &fallback, sizeof bytes);
  }
  static const char kHex[] = "0123456789abcdef";
  std::string out;
  for (unsigned char b : bytes) {
    out.push_back(kHex[b >> 4]);
    out.push_back(kHex[b & 15]);
  }
  return out;
}

// Hands `fd` to the bridge: one connection, the token as the bytes, the descriptor beside
// them. 0 or an errno.
int SendDescriptor(const std::string& socket_path, const std::string& token, int fd) {
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  if (socket_path.empty() || socket_path.size() >= sizeof address.sun_path) return ENAMETOOLONG;
  memcpy(address.sun_path, socket_path.c_str(), socket_path.size() + 1);
  const int connection = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (connection < 0) return errno;
  if (connect(connection, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0) {
    const int error = errno;
    close(connection);
    return error;
  }
  // The host's open file goes only to a bridge of the host's user.
  ucred peer{};
  socklen_t peer_size = sizeof peer;
  if (getsockopt(connection, SOL_SOCKET, SO_PEERCRED, &peer, &peer_size) != 0 || peer.uid != geteuid()) {
    close(connection);
    return EPERM;
  }
  iovec io{const_cast<char*>(token.data()), token.size()};
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int))] = {};
  msghdr message{};
  message.msg_iov = &io;
  message.msg_iovlen = 1;
  message.msg_control = control;
  message.msg_controllen = sizeof control;
  cmsghdr* header = CMSG_FIRSTHDR(&message);
  header->cmsg_level = SOL_SOCKET;
  header->cmsg_type = SCM_RIGHTS;
  header->cmsg_len = CMSG_LEN(sizeof(int));
  memcpy(CMSG_DATA(header), &fd, sizeof fd);
  ssize_t sent;
  do {
    sent = sendmsg(connection, &message, MSG_NOSIGNAL);
  } while (sent < 0 && errno == EINTR);
  const int error = sent == static_cast<ssize_t>(token.size()) ? 0 : sent < 0 ? errno : EIO;
  close(connection);
  return error;
}

std::string DirectoryOf(const std::string& path) {
  const size_t slash = path.find_last_of('/');
  return slash == 0 ? "/" : path.substr(0, slash);
}

}  // namespace

volatile sig_atomic_t LocalFiles::open_downloads = 0;

LocalFiles::LocalFiles() : umask_(CurrentUmask()) {}

void LocalFiles::CountOpenDownloads() { open_downloads = static_cast<sig_atomic_t>(downloads_.size()); }

LocalFiles::~LocalFiles() { DiscardAll(); }

std::optional<LocalFileReplyMessage> LocalFiles::Handle(const LocalFileRequestMessage& request) {
  switch (request.kind) {
    case LocalFileRequestMessage::kOpenForDownload: return OpenForDownload(request);
    case LocalFileRequestMessage::kOpenForUpload: return OpenForUpload(request);
    case LocalFileRequestMessage::kCommit: return Commit(request);
    case LocalFileRequestMessage::kDiscard: Discard(request.token); return std::nullopt;
    default: return Failed(request.token, EINVAL, "a local file request of an unknown kind");
  }
}

LocalFileReplyMessage LocalFiles::OpenForDownload(const LocalFileRequestMessage& request) {
  const std::string& token = request.token;
  if (request.local_path.empty() || request.local_path[0] != '/') {
    return Failed(token, EINVAL, "local_path " + request.local_path + " is not absolute");
  }
  // A directory stands for the file of the remote name inside it, as with cp.
  std::string target = request.local_path;
  struct stat seen;
  if (stat(target.c_str(), &seen) == 0 && S_ISDIR(seen.st_mode)) {
    const std::string& name = request.remote_name;
    if (name.empty() || name == "." || name == ".." || name.find('/') != std::string::npos) {
      return Failed(token, EINVAL, "the remote file's name cannot name a file in " + target);
    }
    target += (target.back() == '/' ? "" : "/") + name;
  }
  if (lstat(target.c_str(), &seen) == 0) {
    if (S_ISDIR(seen.st_mode)) return Failed(token, EISDIR, target + " is a directory");
    if (!request.overwrite) return Failed(token, EEXIST, target + " exists and overwrite is false");
  }
  // The file-size limit is the host's: the bridge, which writes, does not have it.
  rlimit limit;
  if (getrlimit(RLIMIT_FSIZE, &limit) == 0 && limit.rlim_cur != RLIM_INFINITY &&
      static_cast<uint64_t>(request.size) > limit.rlim_cur) {
    return Failed(token, EFBIG,
                  "the remote file's " + std::to_string(request.size) + " bytes exceed this process's file-size "
                  "limit of " + std::to_string(limit.rlim_cur) + " bytes for " + target);
  }

  const size_t slash = target.find_last_of('/');
  const std::string name = target.substr(slash + 1).substr(0, kTempNameKeep);
  Download download;
  download.target = target;
  download.overwrite = request.overwrite;
  download.temp_path = target.substr(0, slash + 1) + "." + name + ".abx-" + RandomSuffix() + ".part";
  // Counted before it exists, so that a stop signal from here on leaves its removal to
  // the loop (main.cc).
  open_downloads = static_cast<sig_atomic_t>(downloads_.size() + 1);
  download.fd = open(download.temp_path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (download.fd < 0) {
    const int error = errno;
    CountOpenDownloads();
    return Failed(token, error, "cannot create a file in " + DirectoryOf(target));
  }
  // Room for the whole file now, so that a full disk fails before a byte moves.
  // Filesystems without fallocate (EOPNOTSUPP) find out as the bytes come.
  if (request.size > 0 && fallocate(download.fd, FALLOC_FL_KEEP_SIZE, 0, request.size) != 0 &&
      (errno == ENOSPC || errno == EDQUOT || errno == EFBIG)) {
    const int error = errno;
    close(download.fd);
    unlink(download.temp_path.c_str());
    CountOpenDownloads();
    return Failed(token, error, "no room for " + std::to_string(request.size) + " bytes in " + DirectoryOf(target));
  }
  if (const int error = SendDescriptor(request.descriptor_socket, token, download.fd); error != 0) {
    close(download.fd);
    unlink(download.temp_path.c_str());
    CountOpenDownloads();
    return Failed(token, error, "cannot hand the new file to the bridge at " + request.descriptor_socket);
  }
  LocalFileReplyMessage reply;
  reply.token = token;
  reply.local_path = target;
  downloads_[token] = std::move(download);
  CountOpenDownloads();
  return reply;
}

LocalFileReplyMessage LocalFiles::OpenForUpload(const LocalFileRequestMessage& request) {
  const std::string& token = request.token;
  const std::string& path = request.local_path;
  // O_NONBLOCK: opening a FIFO must not wait for a writer (it is refused below).
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
  if (fd < 0) return Failed(token, errno, "cannot open " + path);
  struct stat seen;
  if (fstat(fd, &seen) != 0) {
    const int error = errno;
    close(fd);
    return Failed(token, error, "cannot stat " + path);
  }
  if (!S_ISREG(seen.st_mode)) {
    close(fd);
    return Failed(token, S_ISDIR(seen.st_mode) ? EISDIR : EINVAL, path + " is not a regular file");
  }
  const int error = SendDescriptor(request.descriptor_socket, token, fd);
  close(fd);  // the bridge holds its own copy now
  if (error != 0) return Failed(token, error, "cannot hand " + path + " to the bridge at " + request.descriptor_socket);
  LocalFileReplyMessage reply;
  reply.token = token;
  reply.local_path = path;
  reply.size = seen.st_size;
  reply.mode = seen.st_mode & 07777;
  return reply;
}

LocalFileReplyMessage LocalFiles::Commit(const LocalFileRequestMessage& request) {
  auto found = downloads_.find(request.token);
  if (found == downloads_.end()) return Failed(request.token, EINVAL, "no download under this token");
  // Counted as open (for a stop signal's handler) until renamed or removed.
  Download download = std::move(found->second);
  downloads_.erase(found);
  auto fail = [&](int error, const std::string& what) {
    close(download.fd);
    unlink(download.temp_path.c_str());
    CountOpenDownloads();
    return Failed(request.token, error, what);
  };
  struct stat seen;
  if (fstat(download.fd, &seen) != 0) return fail(errno, "cannot stat " + download.temp_path);
  if (seen.st_size != request.size) {
    return fail(EIO, "the download holds " + std::to_string(seen.st_size) + " bytes, not the remote " +
                         std::to_string(request.size));
  }
  if (fchmod(download.fd, static_cast<mode_t>(request.mode & 07777) & ~umask_) != 0) {
    return fail(errno, "cannot set the mode of " + download.temp_path);
  }
  if (request.mtime_unix_ns > 0) {
    const timespec times[2] = {{0, UTIME_NOW},
                               {static_cast<time_t>(request.mtime_unix_ns / 1000000000),
                                static_cast<long>(request.mtime_unix_ns % 1000000000)}};
    if (futimens(download.fd, times) != 0) return fail(errno, "cannot set the time of " + download.temp_path);
  }
  const char* from = download.temp_path.c_str();
  const char* to = download.target.c_str();
  if (download.overwrite) {
    if (rename(from, to) != 0) return fail(errno, "cannot rename the download onto " + download.target);
  } else if (renameat2(AT_FDCWD, from, AT_FDCWD, to, RENAME_NOREPLACE) != 0) {
    // A filesystem without RENAME_NOREPLACE: link(2) never replaces either.
    if (errno != EINVAL && errno != ENOSYS) {
      return fail(errno, "cannot rename the download onto " + download.target);
    }
    if (link(from, to) != 0) return fail(errno, "cannot link the download to " + download.target);
    unlink(from);
  }
  close(download.fd);
  CountOpenDownloads();
  LocalFileReplyMessage reply;
  reply.token = request.token;
  reply.local_path = download.target;
  return reply;
}

void LocalFiles::Discard(const std::string& token) {
  auto found = downloads_.find(token);
  if (found == downloads_.end()) return;
  close(found->second.fd);
  unlink(found->second.temp_path.c_str());
  downloads_.erase(found);
  CountOpenDownloads();
}

void LocalFiles::DiscardAll() {
  for (auto& [token, download] : downloads_) {
    close(download.fd);
    unlink(download.temp_path.c_str());
  }
  downloads_.clear();
  CountOpenDownloads();
}

}  // namespace abx
