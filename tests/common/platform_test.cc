#include "common/platform.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

#include "gtest/gtest.h"
#include "tests/common/temp_dir.h"

namespace abx {
namespace {

using testing::TempDir;

std::string ReadAll(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

int ListenUnix(const std::string& path) {
  int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  strncpy(address.sun_path, path.c_str(), sizeof(address.sun_path) - 1);
  if (bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)) != 0) return -1;
  if (listen(fd, 8) != 0) return -1;
  return fd;
}

// Waits (bounded) for a spawned child to end.
ChildState WaitForExit(pid_t pid) {
  ChildState state;
  for (int i = 0; i < 500; ++i) {
    EXPECT_TRUE(WaitChild(pid, &state));
    if (state.exited) break;
    usleep(10000);
  }
  return state;
}

TEST(PlatformTest, SocketPathLength) {
  std::string error;
  EXPECT_TRUE(CheckUnixSocketPathLength(std::string(107, 'a'), &error));
  EXPECT_FALSE(CheckUnixSocketPathLength(std::string(108, 'a'), &error));
  EXPECT_NE(error.find("108 bytes"), std::string::npos) << error;
  EXPECT_NE(error.find("107"), std::string::npos) << error;
}

TEST(PlatformTest, EnsurePrivateDirCreatesParentsWith0700) {
  TempDir temp;
  const std::string dir = temp.path() + "/a/b/c";
  std::string error;
  ASSERT_TRUE(EnsurePrivateDir(dir, &error)) << error;
  struct stat st;
  ASSERT_EQ(stat(dir.c_str(), &st), 0);
  EXPECT_TRUE(S_ISDIR(st.st_mode));
  EXPECT_EQ(st.st_mode & 0777, 0700u);
  ASSERT_EQ(stat((temp.path() + "/a").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0700u);
  EXPECT_TRUE(EnsurePrivateDir(dir, &error)) << error;  // idempotent
}

TEST(PlatformTest, EnsurePrivateDirRefusesOpenModes) {
  TempDir temp;
  const std::string dir = temp.path() + "/open";
  ASSERT_EQ(mkdir(dir.c_str(), 0755), 0);
  ASSERT_EQ(chmod(dir.c_str(), 0755), 0);
  std::string error;
  EXPECT_FALSE(EnsurePrivateDir(dir, &error));
  EXPECT_NE(error.find("0755"), std::string::npos) << error;
  EXPECT_NE(error.find(dir), std::string::npos) << error;
}

TEST(PlatformTest, EnsurePrivateDirRefusesSymlinksAndFiles) {
  TempDir temp;
  const std::string real = temp.path() + "/real";
  const std::string link = temp.path() + "/link";
  ASSERT_EQ(mkdir(real.c_str(), 0700), 0);
  ASSERT_EQ(symlink(real.c_str(), link.c_str()), 0);
  std::string error;
  EXPECT_FALSE(EnsurePrivateDir(link, &error));
  EXPECT_NE(error.find("symbolic link"), std::string::npos) << error;
  const std::string file = temp.path() + "/file";
  std::ofstream(file) << "x";
  EXPECT_FALSE(EnsurePrivateDir(file, &error));
  EXPECT_NE(error.find("not a directory"), std::string::npos) << error;
}

TEST(PlatformTest, EnsurePrivateDirRefusesOtherOwners) {
  if (geteuid() != 0) GTEST_SKIP() << "needs root to chown";
  TempDir temp;
  const std::string dir = temp.path() + "/theirs";
  ASSERT_EQ(mkdir(dir.c_str(), 0700), 0);
  if (chown(dir.c_str(), 12345, 12345) != 0) GTEST_SKIP() << "chown not permitted here";
  std::string error;
  EXPECT_FALSE(EnsurePrivateDir(dir, &error));
  EXPECT_NE(error.find("owned by uid 12345"), std::string::npos) << error;
}

TEST(PlatformTest, FileLockIsExclusiveAcrossProcesses) {
  TempDir temp;
  const std::string path = temp.path() + "/x.lock";
  std::string error;
  std::unique_ptr<FileLock> lock = FileLock::TryAcquire(path, &error);
  ASSERT_NE(lock, nullptr) << error;
  EXPECT_TRUE(lock->WriteContents("123\n", &error)) << error;
  EXPECT_EQ(ReadAll(path), "123\n");
  struct stat st;
  ASSERT_EQ(stat(path.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);

  // flock locks belong to the open file description, so a second open in this process
  // already conflicts; a child process checks the cross-process case.
  bool busy = false;
  EXPECT_EQ(FileLock::TryAcquire(path, &error, &busy), nullptr);
  EXPECT_TRUE(busy);
  EXPECT_NE(error.find("held by another process"), std::string::npos) << error;

  pid_t child = fork();
  if (child == 0) {
    std::string child_error;
    _exit(FileLock::TryAcquire(path, &child_error) == nullptr ? 0 : 1);
  }
  int status;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  EXPECT_EQ(WEXITSTATUS(status), 0) << "the child got a lock we hold";

  lock.reset();
  EXPECT_NE(FileLock::TryAcquire(path, &error), nullptr) << error;
}

TEST(PlatformTest, FileLockAcquireWaitsThenTimesOut) {
  TempDir temp;
  const std::string path = temp.path() + "/y.lock";
  std::string error;
  std::unique_ptr<FileLock> held = FileLock::TryAcquire(path, &error);
  ASSERT_NE(held, nullptr);
  const int64_t start = MonotonicMillis();
  EXPECT_EQ(FileLock::Acquire(path, 100, &error), nullptr);
  EXPECT_GE(MonotonicMillis() - start, 100);
  EXPECT_NE(error.find("waited"), std::string::npos) << error;

  // Released by a dying holder: a child takes it and exits; we then get it.
  held.reset();
  pid_t child = fork();
  if (child == 0) {
    std::string child_error;
    auto lock = FileLock::TryAcquire(path, &child_error);
    usleep(100000);
    _exit(lock != nullptr ? 0 : 1);
  }
  usleep(20000);
  std::unique_ptr<FileLock> after = FileLock::Acquire(path, 5000, &error);
  EXPECT_NE(after, nullptr) << error;
  int status;
  waitpid(child, &status, 0);
  EXPECT_EQ(WEXITSTATUS(status), 0);
}

TEST(PlatformTest, FileLockReportsUnopenablePath) {
  std::string error;
  bool busy = true;
  EXPECT_EQ(FileLock::TryAcquire("/nonexistent-dir/x.lock", &error, &busy), nullptr);
  EXPECT_FALSE(busy);
  EXPECT_NE(error.find("/nonexistent-dir/x.lock"), std::string::npos) << error;
}

TEST(PlatformTest, ProbeTellsAbsentAcceptingAndStale) {
  TempDir temp;
  const std::string path = temp.path() + "/s.sock";
  EXPECT_EQ(ProbeUnixSocket(path, 100), UnixSocketProbe::kAbsent);
  int listener = ListenUnix(path);
  ASSERT_GE(listener, 0);
  uid_t peer_uid = 4242;
  EXPECT_EQ(ProbeUnixSocket(path, 100, &peer_uid), UnixSocketProbe::kAccepting);
  EXPECT_EQ(peer_uid, geteuid());
  EXPECT_TRUE(CanConnectUnix(path, 100));
  close(listener);  // the file stays: a stale socket
  EXPECT_EQ(ProbeUnixSocket(path, 100), UnixSocketProbe::kRefused);
  EXPECT_FALSE(CanConnectUnix(path, 100));
  EXPECT_EQ(ProbeUnixSocket(std::string(200, 'p'), 100), UnixSocketProbe::kError);
  EXPECT_STREQ(UnixSocketProbeName(UnixSocketProbe::kRefused), "refused");
}

TEST(PlatformTest, PeerCredentialsOfASocketPair) {
  int pair[2];
  ASSERT_EQ(socketpair(AF_UNIX, SOCK_STREAM, 0, pair), 0);
  uid_t uid = 0;
  pid_t pid = 0;
  ASSERT_TRUE(PeerCredentials(pair[0], &uid, &pid));
  EXPECT_EQ(uid, geteuid());
  EXPECT_EQ(pid, getpid());
  close(pair[0]);
  close(pair[1]);
  int fds[2];
  ASSERT_EQ(pipe(fds), 0);
  EXPECT_FALSE(PeerCredentials(fds[0], &uid, &pid));
  close(fds[0]);
  close(fds[1]);
}

TEST(PlatformTest, SpawnDaemonDetachesAndLogs) {
  TempDir temp;
  const std::string log = temp.path() + "/d.log";
  const std::string out = temp.path() + "/facts";
  std::ofstream(log) << "earlier\n";
  int leaked = open("/dev/null", O_RDONLY);  // not close-on-exec: must still not leak
  ASSERT_GE(leaked, 3);
  // The child records its session, its stdin, its working directory, whether our
  // descriptor reached it, its environment and its umask.
  const std::string script =
      "echo to-stdout; echo to-stderr >&2; "
      "{ ps -o sid= -p $$ | tr -d ' '; echo $$; readlink /proc/self/fd/0; pwd; "
      "if [ -e /proc/$$/fd/" + std::to_string(leaked) + " ]; then echo leaked; "
      "else echo closed; fi; echo \"v=$SPAWN_TEST_VAR\"; "
      "echo \"h=$HIDDEN_VAR\"; umask; } > " + out;
  pid_t pid = 0;
  std::string error;
  const std::vector<std::string> env = {"SPAWN_TEST_VAR=yes", "PATH=/usr/bin:/bin"};
  setenv("HIDDEN_VAR", "secret", 1);
  ASSERT_TRUE(SpawnDaemon({"sh", "-c", script}, log, &pid, &error, &env)) << error;
  unsetenv("HIDDEN_VAR");
  close(leaked);
  ChildState state = WaitForExit(pid);
  ASSERT_TRUE(state.exited);
  EXPECT_EQ(state.exit_code, 0);
  EXPECT_EQ(state.term_signal, 0);

  EXPECT_EQ(ReadAll(log), "earlier\nto-stdout\nto-stderr\n");
  std::istringstream facts(ReadAll(out));
  std::string sid, child_pid, stdin_target, cwd, fd_state, var, hidden, mask;
  std::getline(facts, sid);
  std::getline(facts, child_pid);
  std::getline(facts, stdin_target);
  std::getline(facts, cwd);
  std::getline(facts, fd_state);
  std::getline(facts, var);
  std::getline(facts, hidden);
  std::getline(facts, mask);
  EXPECT_EQ(sid, child_pid) << "not a session leader";
  EXPECT_EQ(stdin_target, "/dev/null");
  EXPECT_EQ(cwd, "/");
  EXPECT_EQ(fd_state, "closed");
  EXPECT_EQ(var, "v=yes");
  EXPECT_EQ(hidden, "h=");
  EXPECT_EQ(mask, "0077");
}

TEST(PlatformTest, SpawnDaemonReportsExecFailure) {
  TempDir temp;
  pid_t pid = 0;
  std::string error;
  EXPECT_FALSE(SpawnDaemon({temp.path() + "/missing-binary", "serve"}, temp.path() + "/l.log",
                           &pid, &error));
  EXPECT_NE(error.find("exec " + temp.path() + "/missing-binary"), std::string::npos) << error;
  EXPECT_NE(error.find("No such file"), std::string::npos) << error;
}

TEST(PlatformTest, SpawnDaemonReportsUnwritableLog) {
  pid_t pid = 0;
  std::string error;
  EXPECT_FALSE(SpawnDaemon({"true"}, "/nonexistent-dir/x.log", &pid, &error));
  EXPECT_NE(error.find("/nonexistent-dir/x.log"), std::string::npos) << error;
}

TEST(PlatformTest, WaitChildReportsExitCodesAndSignals) {
  TempDir temp;
  pid_t pid = 0;
  std::string error;
  ASSERT_TRUE(SpawnDaemon({"sh", "-c", "exit 3"}, temp.path() + "/l.log", &pid, &error));
  ChildState state = WaitForExit(pid);
  EXPECT_TRUE(state.exited);
  EXPECT_EQ(state.exit_code, 3);

  ASSERT_TRUE(SpawnDaemon({"sleep", "30"}, temp.path() + "/l.log", &pid, &error));
  ASSERT_TRUE(WaitChild(pid, &state));
  EXPECT_FALSE(state.exited);
  kill(pid, SIGKILL);
  state = WaitForExit(pid);
  EXPECT_TRUE(state.exited);
  EXPECT_EQ(state.term_signal, SIGKILL);
  EXPECT_FALSE(WaitChild(pid, &state)) << "already reaped";
}

TEST(PlatformTest, ReadFileTailStartsAtALine) {
  TempDir temp;
  const std::string path = temp.path() + "/t.log";
  std::ofstream(path) << "line one\nline two\nline three\n";
  EXPECT_EQ(ReadFileTail(path, 1000), "line one\nline two\nline three\n");
  EXPECT_EQ(ReadFileTail(path, 15), "line three\n");
  EXPECT_EQ(ReadFileTail(temp.path() + "/none", 100), "");
}

TEST(PlatformTest, SelfExecutableDirIsOurs) {
  const std::string dir = SelfExecutableDir();
  ASSERT_FALSE(dir.empty());
  char exe[4096];
  ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
  ASSERT_GT(n, 0);
  exe[n] = '\0';
  EXPECT_EQ(std::string(exe).rfind(dir + "/", 0), 0u);
}

}  // namespace
}  // namespace abx
