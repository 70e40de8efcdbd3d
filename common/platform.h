#pragma once

// Every operating-system call the shim and the bridge make (directories, locks, Unix
// sockets, peer credentials, spawning the daemon) lives behind this header, so the rest
// of the code reads as policy and the POSIX details stay in one file (platform.cc).
//
// Functions that can fail return false (or null) and, when `error` is not null, set it to
// a message that names the path and the failed call, e.g.
// "mkdir /run/user/1000/abx-opensandbox: Permission denied".

#include <sys/types.h>

#include <memory>
#include <string>
#include <vector>

namespace abx {

// Longest path a Unix socket address can hold (sun_path is 108 bytes on Linux, one of
// which is the terminating NUL).
inline constexpr size_t kMaxUnixSocketPathLength = 107;

// True when `path` fits in a sockaddr_un; otherwise false with an error that names the
// path and both lengths.
bool CheckUnixSocketPathLength(const std::string& path, std::string* error);

// mkdir -p: creates `dir` and its missing parents, each with mode 0700. Existing
// directories are left as they are.
bool MakeDirectories(const std::string& dir, std::string* error);

// Makes `dir` a directory only we can use: creates it (and missing parents) with mode
// 0700, then refuses it unless it is a real directory (not a symlink), owned by our
// effective uid, with no group or other permission bits.
bool EnsurePrivateDir(const std::string& dir, std::string* error);

// An exclusive advisory lock (flock) on a lock file, held until the object is destroyed
// or the process ends. The kernel drops it when the holder dies, so a crashed holder
// never leaves a stale lock behind. The descriptor is close-on-exec: spawned children
// never inherit the lock.
class FileLock {
 public:
  // Takes the lock at once or fails: null with error "held by another process" when
  // another process holds it (`*busy`, when given, tells that case from real errors).
  // Creates the lock file (mode 0600) if missing.
  static std::unique_ptr<FileLock> TryAcquire(const std::string& path, std::string* error,
                                              bool* busy = nullptr);

  // Waits up to `timeout_ms` (polling every few milliseconds) for the lock. Null with
  // error "held by another process (waited N ms)" when the wait ends.
  static std::unique_ptr<FileLock> Acquire(const std::string& path, int timeout_ms,
                                           std::string* error);

  ~FileLock();
  FileLock(const FileLock&) = delete;
  FileLock& operator=(const FileLock&) = delete;

  // Replaces the lock file's contents with `text` (e.g. the holder's pid), for people
  // looking at the file; the lock itself does not depend on it.
  bool WriteContents(const std::string& text, std::string* error);

  const std::string& path() const { return path_; }

 private:
  FileLock(int fd, std::string path);

  int fd_;
  std::string path_;
};

// The uid and pid of the process at the other end of a connected Unix socket
// (SO_PEERCRED). False when `fd` is not such a socket.
bool PeerCredentials(int fd, uid_t* uid, pid_t* pid);

// What a short connect to a Unix socket path found.
enum class UnixSocketProbe {
  kAccepting,  // someone listens there
  kAbsent,     // no file at the path
  kRefused,    // a file but nobody listening: a stale socket left by a dead process
  kTimeout,    // the listener did not accept within the timeout (alive but stuck)
  kError,      // anything else (permissions, not a socket, path too long)
};
const char* UnixSocketProbeName(UnixSocketProbe probe);

// Connects to `path` once (retrying only while the listener's backlog is full, up to
// `timeout_ms`) and hangs up. On kAccepting, `*peer_uid` (when given) is the uid of the
// listening process (SO_PEERCRED), so a caller can refuse a socket someone else serves.
UnixSocketProbe ProbeUnixSocket(const std::string& path, int timeout_ms,
                                uid_t* peer_uid = nullptr);

// A connected Unix stream socket to `path`: non-blocking and close-on-exec; retries only
// while the listener's backlog is full, up to `timeout_ms`. -1 with `*error` otherwise.
int ConnectUnixSocket(const std::string& path, int timeout_ms, std::string* error);

// True when a connect to `path` succeeds within `timeout_ms`; refused means stale.
bool CanConnectUnix(const std::string& path, int timeout_ms);

// Starts `argv` (argv[0] is a path, or a name looked up in PATH) as a detached daemon:
// a child in its own session (setsid) with stdin on /dev/null, stdout and stderr
// appended to `log_path` (created 0600), every other descriptor closed, working
// directory "/", umask 077 and default signal handling. `env` (entries "NAME=value")
// replaces the environment when given; null inherits ours.
//
// Returns once the exec has happened (or failed: then false with the exec error), with
// the child's pid in `*pid`. The child stays our child, so WaitChild can tell whether it
// exited and how; it is reparented to init when we exit.
//
// argv is visible to every user (ps, /proc): never put secrets in it.
bool SpawnDaemon(const std::vector<std::string>& argv, const std::string& log_path,
                 pid_t* pid, std::string* error,
                 const std::vector<std::string>* env = nullptr);

// The state of a child process we spawned, without blocking (waitpid WNOHANG).
struct ChildState {
  bool exited = false;     // it has ended (and was reaped by this call)
  int exit_code = 0;       // its exit status, when it exited normally
  int term_signal = 0;     // the signal that killed it, when one did
};
// False when `pid` is not (or no longer) a child of ours.
bool WaitChild(pid_t pid, ChildState* state);

// Directory of the running executable (dirname of /proc/self/exe); empty on failure.
std::string SelfExecutableDir();

// The last `max_bytes` of the file at `path`, starting at a line boundary when one is
// near; empty when it cannot be read.
std::string ReadFileTail(const std::string& path, size_t max_bytes);

// Writes all of `size` bytes to `fd`, retrying on short writes and EINTR. False (errno
// kept) on error, e.g. EPIPE when the reader went away.
bool WriteAll(int fd, const char* data, size_t size);

// Monotonic clock in milliseconds, for timeouts.
int64_t MonotonicMillis();

}  // namespace abx
