// The bridge as a local service, as its user sees it: `abx-opensandbox-bridge sandboxes`,
// socket activation, private modes on its socket, recovery from a SIGKILLed bridge, the
// idle exit, the SIGTERM drain, and its JSON log.

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "tests/e2e/activated_bridge.h"
#include "tests/e2e/harness.h"

namespace abx::e2e {
namespace {

// The JSON log lines of `log` whose "event" is `event`, parsed.
std::vector<std::unique_ptr<rapidjson::Document>> LogEvents(const std::string& log,
                                                            const std::string& event) {
  std::vector<std::unique_ptr<rapidjson::Document>> out;
  std::istringstream lines(log);
  std::string line;
  while (std::getline(lines, line)) {
    auto doc = std::make_unique<rapidjson::Document>();
    std::string error;
    if (!ParseJson(line, doc.get(), &error) || !doc->IsObject()) continue;
    if (GetString(*doc, "event") == event) out.push_back(std::move(doc));
  }
  return out;
}

// Polls `path` until it holds `needle` or `timeout` passes.
bool WaitForText(const std::string& path, const std::string& needle, Millis timeout) {
  const auto deadline = Clock::now() + timeout;
  while (Clock::now() < deadline) {
    if (ReadFile(path).find(needle) != std::string::npos) return true;
    std::this_thread::sleep_for(Millis(20));
  }
  return ReadFile(path).find(needle) != std::string::npos;
}

bool WaitGone(pid_t pid, Millis timeout) {
  const auto deadline = Clock::now() + timeout;
  while (ProcessAlive(pid) && Clock::now() < deadline) std::this_thread::sleep_for(Millis(20));
  return !ProcessAlive(pid);
}

// errno of a plain connect to `path`, 0 when it connected.
int ConnectErrno(const std::string& path) {
  int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::strncpy(addr.sun_path, path.c_str(), sizeof addr.sun_path - 1);
  int rc = ::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr);
  int err = rc == 0 ? 0 : errno;
  ::close(fd);
  return err;
}

unsigned Mode(const std::string& path) {
  struct stat st;
  return ::lstat(path.c_str(), &st) == 0 ? (st.st_mode & 07777) : 0xFFFF;
}

uid_t Owner(const std::string& path) {
  struct stat st;
  return ::lstat(path.c_str(), &st) == 0 ? st.st_uid : static_cast<uid_t>(-1);
}

class BridgeOpsTest : public TestEnv {
 protected:
  // `abx-opensandbox-bridge <args>` with the shim's environment; its output, and
  // whether it exited 0.
  std::string BridgeCommand(const std::vector<std::string>& args, bool* ok) {
    std::vector<std::string> argv = {BridgeBinary()};
    argv.insert(argv.end(), args.begin(), args.end());
    std::string output;
    auto status = RunCommand(argv, ShimEnv(), Millis(10000), &output);
    *ok = status && status->exited && status->code == 0;
    return output;
  }
};

TEST_F(BridgeOpsTest, SandboxesListsWhatTheBridgeCachedWithoutTheKey) {
  EppSession* shim = StartInitializedShim();
  ASSERT_NE(shim, nullptr);
  bool ok = false;
  std::string empty = BridgeCommand({"sandboxes", "--socket", socket_path()}, &ok);
  ASSERT_TRUE(ok) << empty;
  EXPECT_NE(empty.find("no sandbox cached"), std::string::npos) << empty;

  const std::string sandbox = CreateSandbox(shim);
  ASSERT_FALSE(sandbox.empty());
  MessagePtr ran = shim->Request(
      "exec.run", JsonObject().Str("sandbox_id", sandbox).Str("command", "true").str(),
      Millis(20000));
  ASSERT_NE(ran, nullptr);
  ASSERT_FALSE(ran->IsError()) << ran->raw;

  std::string table = BridgeCommand({"sandboxes", "--socket", socket_path()}, &ok);
  ASSERT_TRUE(ok) << table;
  EXPECT_NE(table.find(sandbox), std::string::npos) << table;
  EXPECT_NE(table.find(base_url()), std::string::npos) << "no server in: " << table;
  EXPECT_NE(table.find("credential 1"), std::string::npos) << table;
  EXPECT_NE(table.find("endpoint"), std::string::npos) << table;
  EXPECT_EQ(table.find(api_key()), std::string::npos) << "the API key is shown: " << table;

  std::string json = BridgeCommand({"sandboxes", "--socket", socket_path(), "--json"}, &ok);
  ASSERT_TRUE(ok) << json;
  rapidjson::Document doc;
  std::string error;
  ASSERT_TRUE(ParseJson(json, &doc, &error)) << error << ": " << json;
  const rapidjson::Value* list = Find(doc, "sandboxes");
  ASSERT_TRUE(list != nullptr && list->IsArray() && list->Size() == 1) << json;
  const rapidjson::Value& entry = (*list)[0];
  EXPECT_EQ(GetString(entry, "id"), sandbox) << json;
  EXPECT_EQ(GetString(entry, "credential"), "credential 1") << json;
  EXPECT_EQ(GetString(entry, "server").rfind(base_url(), 0), 0u) << json;
  const rapidjson::Value* endpoints = Find(entry, "endpoints");
  ASSERT_TRUE(endpoints != nullptr && endpoints->IsArray() && endpoints->Size() >= 1) << json;
  EXPECT_FALSE(GetString((*endpoints)[0], "url").empty()) << json;
  EXPECT_EQ(GetString((*endpoints)[0], "access"), "direct") << json;
  EXPECT_GE(GetInt(entry, "age_s", -1), 0) << json;
  EXPECT_EQ(json.find(api_key()), std::string::npos) << "the API key is shown: " << json;

  MessagePtr killed = shim->Request("sandbox.kill", JsonObject().Str("sandbox_id", sandbox).str(),
                                    Millis(20000));
  ASSERT_NE(killed, nullptr);
  ASSERT_FALSE(killed->IsError()) << killed->raw;
  std::string after = BridgeCommand({"sandboxes", "--socket", socket_path()}, &ok);
  ASSERT_TRUE(ok) << after;
  EXPECT_EQ(after.find(sandbox), std::string::npos) << "still listed after kill: " << after;
  EXPECT_EQ(after.find(api_key()), std::string::npos) << after;
}

// `status` (with or without --json) prints one JSON object naming its socket as given.
TEST_F(BridgeOpsTest, StatusPrintsJsonWithTheSocketItAsked) {
  EppSession* shim = StartInitializedShim();
  ASSERT_NE(shim, nullptr);
  for (bool with_flag : {false, true}) {
    std::vector<std::string> args = {"status", "--socket", socket_path()};
    if (with_flag) args.push_back("--json");
    bool ok = false;
    const std::string output = BridgeCommand(args, &ok);
    ASSERT_TRUE(ok) << output;
    rapidjson::Document doc;
    std::string error;
    ASSERT_TRUE(ParseJson(output, &doc, &error)) << error << ": " << output;
    EXPECT_EQ(GetString(doc, "socket"), socket_path()) << output;
    EXPECT_GE(GetInt(doc, "sessions_active", -1), 1) << output;
  }
}

TEST_F(BridgeOpsTest, SandboxesNeverShowsAPasswordInTheServerUrl) {
  const std::string password = "e2e-UrlPassword-93c1";
  std::string url = base_url();
  url.insert(url.find("://") + 3, "someone:" + password + "@");
  EppSession* shim = StartInitializedShim({{"ABX_OPENSANDBOX_BASE_URL", url}});
  ASSERT_NE(shim, nullptr);
  const std::string sandbox = CreateSandbox(shim);
  ASSERT_FALSE(sandbox.empty());
  for (const char* format : {"", "--json"}) {
    std::vector<std::string> args = {"sandboxes", "--socket", socket_path()};
    if (*format) args.push_back(format);
    bool ok = false;
    std::string output = BridgeCommand(args, &ok);
    ASSERT_TRUE(ok) << output;
    EXPECT_NE(output.find(sandbox), std::string::npos) << output;
    EXPECT_NE(output.find(base_url()), std::string::npos) << output;
    EXPECT_EQ(output.find(password), std::string::npos) << "the URL's password is shown: " << output;
    EXPECT_EQ(output.find("someone"), std::string::npos) << output;
  }
}

TEST_F(BridgeOpsTest, SocketActivatedBridgeServesShimsThroughTheInheritedSocket) {
  std::string error;
  auto bridge = ActivatedBridge::Start(BridgeBinary(), socket_path(), ShimEnv(),
                                       bridge_log_path(), &error);
  ASSERT_NE(bridge, nullptr) << error;

  EppSession* shim = StartInitializedShim();
  ASSERT_NE(shim, nullptr);
  MessagePtr listed = shim->Request("sandbox.list", "{}");
  ASSERT_NE(listed, nullptr);
  EXPECT_FALSE(listed->IsError()) << listed->raw;
  EXPECT_EQ(shim->StderrText().find("restart reason"), std::string::npos)
      << "the shim started a bridge of its own: " << shim->StderrText();
  EXPECT_EQ(BridgePid().value_or(-1), bridge->pid()) << "another process serves the socket";
  EXPECT_TRUE(ProcessAlive(bridge->pid()));

  const std::string log = ReadFile(bridge_log_path());
  EXPECT_EQ(LogEvents(log, "bridge.socket_inherited").size(), 1u) << log;
  auto ready = LogEvents(log, "bridge.ready");
  ASSERT_EQ(ready.size(), 1u) << log;
  EXPECT_EQ(GetString(*ready[0], "socket_source"), "inherited") << log;
  EXPECT_EQ(GetString(*ready[0], "socket"), socket_path()) << log;

  // An inherited socket belongs to whoever passed it: the bridge leaves the path alone.
  shim->CloseStdin();
  ASSERT_TRUE(shim->WaitExit(Millis(3000)).has_value());
  ::kill(bridge->pid(), SIGTERM);
  auto status = bridge->WaitExit(Millis(5000));
  ASSERT_TRUE(status.has_value()) << "the activated bridge did not exit on SIGTERM";
  EXPECT_TRUE(status->exited && status->code == 0) << status->ToString();
  EXPECT_TRUE(IsSocket(socket_path())) << "the bridge removed a socket it did not bind";
}

TEST_F(BridgeOpsTest, ActivationWithASocketThatIsNotListeningIsRefused) {
  // fd 3 is a connected-less, non-listening Unix socket: the bridge must not serve it.
  int fds[2];
  ASSERT_EQ(::socketpair(AF_UNIX, SOCK_STREAM, 0, fds), 0);
  std::string log_path = logs_dir() + "/bad-activation.log";
  std::vector<std::string> env = ShimEnv();
  env.push_back("LISTEN_FDS=1");
  // posix_spawn cannot put the pid in before exec, so the child is made by hand here.
  std::vector<std::string> args = {BridgeBinary(), "serve", "--socket", socket_path()};
  std::vector<char*> argv;
  for (std::string& arg : args) argv.push_back(arg.data());
  argv.push_back(nullptr);
  std::vector<char*> envp;
  for (std::string& entry : env) envp.push_back(entry.data());
  char listen_pid[32] = "LISTEN_PID=";
  envp.push_back(listen_pid);
  envp.push_back(nullptr);
  int log_fd = ::open(log_path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
  ASSERT_GE(log_fd, 0);
  pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    char digits[16];
    int n = 0;
    for (pid_t self = getpid(); self > 0; self /= 10) digits[n++] = '0' + self % 10;
    char* out = listen_pid + 11;
    while (n > 0) *out++ = digits[--n];
    *out = '\0';
    ::dup2(log_fd, 2);
    ::dup2(fds[0], 3);
    ::execve(argv[0], argv.data(), envp.data());
    _exit(127);
  }
  ::close(log_fd);
  ::close(fds[0]);
  int raw = 0;
  const auto deadline = Clock::now() + Millis(5000);
  pid_t done = 0;
  while ((done = ::waitpid(pid, &raw, WNOHANG)) == 0 && Clock::now() < deadline) {
    std::this_thread::sleep_for(Millis(10));
  }
  if (done != pid) ::kill(pid, SIGKILL), ::waitpid(pid, &raw, 0);
  ::close(fds[1]);
  ASSERT_EQ(done, pid) << "the bridge kept running on a socket it cannot serve";
  EXPECT_TRUE(WIFEXITED(raw) && WEXITSTATUS(raw) != 0);
  const std::string log = ReadFile(log_path);
  EXPECT_NE(log.find("not a listening AF_UNIX stream socket"), std::string::npos) << log;
}

TEST_F(BridgeOpsTest, SocketDirIs0700AndSocketIs0600OwnedByTheUser) {
  // The default location, which the shim and bridge create themselves.
  const std::string runtime_dir = root_dir() + "/xdg";
  ASSERT_EQ(::mkdir(runtime_dir.c_str(), 0700), 0);
  EppSession* shim = StartInitializedShim(
      {{"ABX_OPENSANDBOX_BRIDGE_SOCKET", std::nullopt}, {"XDG_RUNTIME_DIR", runtime_dir}});
  ASSERT_NE(shim, nullptr);
  const std::string dir = runtime_dir + "/abx-opensandbox";
  std::string socket;
  if (DIR* listing = ::opendir(dir.c_str())) {
    while (dirent* entry = ::readdir(listing)) {
      std::string name = entry->d_name;
      if (name.size() > 5 && name.compare(name.size() - 5, 5, ".sock") == 0) socket = dir + "/" + name;
    }
    ::closedir(listing);
  }
  ASSERT_FALSE(socket.empty()) << "no socket in " << dir;
  EXPECT_EQ(Mode(dir), 0700u) << dir;
  EXPECT_EQ(Owner(dir), ::geteuid()) << dir;
  EXPECT_TRUE(IsSocket(socket)) << socket;
  EXPECT_EQ(Mode(socket), 0600u) << socket;
  EXPECT_EQ(Owner(socket), ::geteuid()) << socket;
  const std::string log = socket.substr(0, socket.size() - 5) + ".log";
  EXPECT_EQ(Mode(log), 0600u) << log;
  EXPECT_EQ(Mode(socket + ".lock"), 0600u) << socket << ".lock";

  // And at an explicit path, in a directory the user made.
  EppSession* explicit_shim = StartInitializedShim();
  ASSERT_NE(explicit_shim, nullptr);
  EXPECT_EQ(Mode(socket_path()), 0600u) << socket_path();
  EXPECT_EQ(Owner(socket_path()), ::geteuid()) << socket_path();

  bool ok = false;
  BridgeCommand({"stop", "--socket", socket}, &ok);
  EXPECT_TRUE(ok) << "cannot stop the bridge at " << socket;
}

TEST_F(BridgeOpsTest, StaleSocketOfAKilledBridgeIsReplacedByTheNextShim) {
  EppSession* first = StartInitializedShim();
  ASSERT_NE(first, nullptr);
  auto old_pid = BridgePid();
  ASSERT_TRUE(old_pid.has_value());
  // The shim goes first (a shim mid-session would start a new bridge itself at once);
  // the bridge outlives it, and is then killed with no chance to clean up.
  first->CloseStdin();
  ASSERT_TRUE(first->WaitExit(Millis(3000)).has_value());
  ASSERT_EQ(::kill(*old_pid, SIGKILL), 0);
  ASSERT_TRUE(WaitGone(*old_pid, Millis(3000)));
  ASSERT_TRUE(IsSocket(socket_path())) << "SIGKILL leaves the socket file behind";
  // The pid reads as gone once its main thread is a zombie; the other threads may still
  // be unmapping memory (slow under AddressSanitizer) and close the socket only after.
  int connect_errno = ConnectErrno(socket_path());
  for (const auto deadline = Clock::now() + Millis(3000);
       connect_errno != ECONNREFUSED && Clock::now() < deadline;) {
    std::this_thread::sleep_for(Millis(20));
    connect_errno = ConnectErrno(socket_path());
  }
  ASSERT_EQ(connect_errno, ECONNREFUSED) << "nobody should listen there";

  EppSession* next = StartInitializedShim();
  ASSERT_NE(next, nullptr) << "the next shim did not recover from the stale socket";
  EXPECT_NE(next->StderrText().find("restart reason STALE_SOCKET"), std::string::npos)
      << next->StderrText();
  auto new_pid = BridgePid();
  ASSERT_TRUE(new_pid.has_value());
  EXPECT_NE(*new_pid, *old_pid);
  EXPECT_TRUE(ProcessAlive(*new_pid));
  MessagePtr listed = next->Request("sandbox.list", "{}");
  ASSERT_NE(listed, nullptr);
  EXPECT_FALSE(listed->IsError()) << listed->raw;
}

TEST_F(BridgeOpsTest, BridgeExitsAfterItsIdleTimeoutButNotDuringASession) {
  EppSession* shim = StartInitializedShim({{"ABX_OPENSANDBOX_BRIDGE_IDLE_TIMEOUT", "2"}});
  ASSERT_NE(shim, nullptr);
  auto pid = BridgePid();
  ASSERT_TRUE(pid.has_value());
  auto ready = LogEvents(ReadFile(bridge_log_path()), "bridge.ready");
  ASSERT_EQ(ready.size(), 1u);
  EXPECT_EQ(GetString(*ready[0], "idle_timeout_s"), "2");
  // The bridge runs on jemalloc (bridge/daemon/allocator.h), but in ASan and TSan builds.
#ifdef ABX_BRIDGE_SYSTEM_ALLOCATOR
  EXPECT_EQ(GetString(*ready[0], "allocator"), "C library");
#else
  EXPECT_EQ(GetString(*ready[0], "allocator").rfind("jemalloc ", 0), 0u)
      << GetString(*ready[0], "allocator");
#endif

  // An open session, however quiet, keeps the bridge.
  std::this_thread::sleep_for(Millis(3500));
  EXPECT_TRUE(ProcessAlive(*pid)) << "the bridge idled out under an open session";

  shim->CloseStdin();
  ASSERT_TRUE(shim->WaitExit(Millis(3000)).has_value());
  const auto closed = Clock::now();
  ASSERT_TRUE(WaitGone(*pid, Millis(8000))) << "the bridge outlived its 2 s idle timeout";
  EXPECT_GE(Clock::now() - closed, Millis(1500)) << "the bridge left before its idle timeout";
  auto exiting = LogEvents(ReadFile(bridge_log_path()), "bridge.exiting");
  ASSERT_EQ(exiting.size(), 1u);
  EXPECT_EQ(GetString(*exiting[0], "reason"), "idle");
  EXPECT_FALSE(FileExists(socket_path())) << "an idle exit left its socket behind";
}

TEST_F(BridgeOpsTest, DefaultIdleTimeoutIsTheDocumentedTenMinutes) {
  EppSession* shim = StartInitializedShim({{"ABX_OPENSANDBOX_BRIDGE_IDLE_TIMEOUT", std::nullopt}});
  ASSERT_NE(shim, nullptr);
  auto ready = LogEvents(ReadFile(bridge_log_path()), "bridge.ready");
  ASSERT_EQ(ready.size(), 1u);
  EXPECT_EQ(GetString(*ready[0], "idle_timeout_s"), "600");
  bool ok = false;
  std::string help = BridgeCommand({"--help"}, &ok);
  EXPECT_TRUE(ok);
  EXPECT_NE(help.find("600 s"), std::string::npos) << help;
}

TEST_F(BridgeOpsTest, SigtermDrainsInFlightWorkWhileTheNextShimGetsAFreshBridge) {
  EppSession* first = StartInitializedShim();
  ASSERT_NE(first, nullptr);
  const std::string sandbox = CreateSandbox(first);
  ASSERT_FALSE(sandbox.empty());
  auto old_pid = BridgePid();
  ASSERT_TRUE(old_pid.has_value());

  const int64_t run = first->SendRequest(
      "exec.run",
      JsonObject().Str("sandbox_id", sandbox).Str("command", "sleep 2; echo slept").str());
  std::this_thread::sleep_for(Millis(500));
  ASSERT_EQ(::kill(*old_pid, SIGTERM), 0);
  ASSERT_TRUE(WaitForText(bridge_log_path(), "\"event\":\"bridge.exiting\"", Millis(3000)))
      << "the bridge did not start draining on SIGTERM";

  // The draining bridge takes no new connection: its socket goes right after that line.
  const auto refuse_deadline = Clock::now() + Millis(1000);
  while (ConnectErrno(socket_path()) == 0 && Clock::now() < refuse_deadline) {
    std::this_thread::sleep_for(Millis(5));
  }
  EXPECT_EQ(ConnectErrno(socket_path()), ENOENT) << "the draining bridge still accepts";

  // A shim that starts now gets a fresh bridge at once, beside the draining one.
  EppSession* next = StartInitializedShim();
  ASSERT_NE(next, nullptr) << "a shim started during the drain did not get a bridge";
  EXPECT_NE(next->StderrText().find("restart reason NOT_RUNNING"), std::string::npos)
      << next->StderrText();
  auto new_pid = BridgePid();
  ASSERT_TRUE(new_pid.has_value());
  EXPECT_NE(*new_pid, *old_pid);
  EXPECT_TRUE(ProcessAlive(*old_pid)) << "the old bridge did not wait for its session";
  MessagePtr listed = next->Request("sandbox.list", "{}");
  ASSERT_NE(listed, nullptr);
  EXPECT_FALSE(listed->IsError()) << listed->raw;

  // The in-flight command finishes with its real answer.
  MessagePtr ran = first->WaitResponse(run, Millis(15000));
  ASSERT_NE(ran, nullptr) << "no answer to the exec.run in flight during the drain";
  ASSERT_FALSE(ran->IsError()) << ran->raw;
  EXPECT_EQ(GetInt(ran->result(), "exit_code", -1), 0) << ran->raw;
  EXPECT_EQ(GetString(ran->result(), "stdout"), "slept\n") << ran->raw;

  // Once its last session ends, the old bridge exits.
  first->CloseStdin();
  ASSERT_TRUE(first->WaitExit(Millis(3000)).has_value());
  EXPECT_TRUE(WaitGone(*old_pid, Millis(5000))) << "the drained bridge did not exit";
  EXPECT_TRUE(ProcessAlive(*new_pid)) << "the fresh bridge died with the old one";
  EXPECT_TRUE(IsSocket(socket_path())) << "the old bridge removed the fresh bridge's socket";
  const std::string log = ReadFile(bridge_log_path());
  auto exiting = LogEvents(log, "bridge.exiting");
  ASSERT_GE(exiting.size(), 1u) << log;
  EXPECT_EQ(GetString(*exiting[0], "reason"), "drain") << log;
  EXPECT_EQ(LogEvents(log, "bridge.exited").size(), 1u) << log;
}

TEST_F(BridgeOpsTest, LogIsJsonLinesWithRequestIdsAndNoSecrets) {
  EppSession* shim = StartInitializedShim();
  ASSERT_NE(shim, nullptr);
  MessagePtr missing = shim->Request("sandbox.get", R"({"sandbox_id":"no-such-sandbox"})",
                                     Millis(20000));
  ASSERT_NE(missing, nullptr);
  ASSERT_TRUE(missing->IsError()) << missing->raw;
  const std::string request_id = GetString(missing->error(), "data.request_id");
  ASSERT_FALSE(request_id.empty()) << "the fake sends X-Request-ID: " << missing->raw;
  shim->CloseStdin();
  ASSERT_TRUE(shim->WaitExit(Millis(3000)).has_value());

  const std::string log = ReadFile(bridge_log_path());
  ASSERT_FALSE(log.empty());
  std::istringstream lines(log);
  std::string line;
  int count = 0;
  while (std::getline(lines, line)) {
    ++count;
    rapidjson::Document doc;
    std::string error;
    ASSERT_TRUE(ParseJson(line, &doc, &error)) << "not JSON: " << line;
    EXPECT_FALSE(GetString(doc, "ts").empty()) << line;
    EXPECT_FALSE(GetString(doc, "level").empty()) << line;
    EXPECT_FALSE(GetString(doc, "event").empty()) << line;
  }
  EXPECT_GE(count, 3) << log;
  auto failed = LogEvents(log, "request.failed");
  ASSERT_EQ(failed.size(), 1u) << log;
  EXPECT_EQ(GetString(*failed[0], "method"), "sandbox.get") << log;
  EXPECT_EQ(GetString(*failed[0], "id"), ToJson(missing->id())) << log;
  EXPECT_EQ(GetString(*failed[0], "request_id"), request_id) << log;
  EXPECT_EQ(GetString(*failed[0], "shim_pid"), std::to_string(shim->pid())) << log;
  EXPECT_EQ(log.find(api_key()), std::string::npos) << "the API key is in the log";
}

TEST_F(BridgeOpsTest, ShimStartsTheBridgeOnceABridgeOnItsWayOutFreesTheLock) {
  // A bridge on its way out (draining, idling out) has removed its socket but may still
  // hold the lock for a moment. The test plays that bridge: it holds the lock for 1.5 s.
  const int lock_fd = ::open(lock_path().c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
  ASSERT_GE(lock_fd, 0);
  ASSERT_EQ(::flock(lock_fd, LOCK_EX | LOCK_NB), 0);
  std::thread release([lock_fd] {
    std::this_thread::sleep_for(Millis(1500));
    ::close(lock_fd);
  });
  const auto started = Clock::now();
  EppSession* shim = StartInitializedShim();
  release.join();
  ASSERT_NE(shim, nullptr) << "the shim gave up while the lock was held";
  EXPECT_GE(Clock::now() - started, Millis(1400)) << "a bridge served without the lock";
  const std::string log = ReadFile(bridge_log_path());
  EXPECT_GE(LogEvents(log, "bridge.lock_held").size(), 1u) << log;
  EXPECT_EQ(LogEvents(log, "bridge.ready").size(), 1u) << log;
  MessagePtr listed = shim->Request("sandbox.list", "{}");
  ASSERT_NE(listed, nullptr);
  EXPECT_FALSE(listed->IsError()) << listed->raw;
}

TEST_F(BridgeOpsTest, ServeNeverReplacesASocketSomeoneElseListensOn) {
  // A socket activator's socket, with its bridge between runs: listening, no lock held.
  const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::strncpy(addr.sun_path, socket_path().c_str(), sizeof addr.sun_path - 1);
  ASSERT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
  ASSERT_EQ(::listen(fd, 8), 0);
  struct stat before;
  ASSERT_EQ(::stat(socket_path().c_str(), &before), 0);

  bool ok = false;
  std::string output = BridgeCommand({"serve", "--socket", socket_path()}, &ok);
  EXPECT_TRUE(ok) << "serve should step aside with status 0: " << output;
  EXPECT_NE(output.find("bridge.socket_in_use"), std::string::npos) << output;
  struct stat after;
  ASSERT_EQ(::stat(socket_path().c_str(), &after), 0);
  EXPECT_EQ(after.st_ino, before.st_ino) << "serve replaced a socket it did not own";
  ::close(fd);
}

// The CLI a person meets first, with no bridge running: --help (or -h) on every command
// prints its usage on stdout and exits 0; a wrong use prints it on stderr and exits 2; a
// command about the running bridge says in a sentence that there is none, and starts
// nothing; a command that works with the server starts a bridge as the shim does.
TEST_F(BridgeOpsTest, TheCliHelpsAndStartsABridgeOnDemand) {
  const std::string socket = socket_dir() + "/cli-on-demand.sock";
  std::string out, err;
  auto run = [&](const std::vector<std::string>& args) -> int {
    std::string command = "'" + BridgeBinary() + "'";
    for (const std::string& arg : args) command += " '" + arg + "'";
    command += " >'" + root_dir() + "/cli.out' 2>'" + root_dir() + "/cli.err'";
    std::string ignored;
    auto status = RunCommand({"/bin/sh", "-c", command}, ShimEnv(), Millis(20000), &ignored);
    out = ReadFile(root_dir() + "/cli.out");
    err = ReadFile(root_dir() + "/cli.err");
    return status && status->exited ? status->code : -1;
  };
  for (const char* command : {"serve", "status", "stop", "sandboxes", "pty", "snapshot", "template", "watch"}) {
    for (const char* flag : {"--help", "-h"}) {
      EXPECT_EQ(run({command, flag, "--socket", socket}), 0) << command << " " << flag << ": " << err;
      EXPECT_EQ(out.rfind(std::string("usage: abx-opensandbox-bridge ") + command, 0), 0u) << out;
      EXPECT_EQ(err, "") << command << " " << flag;
    }
  }
  for (const std::vector<std::string>& wrong : std::vector<std::vector<std::string>>{
           {"pty"}, {"watch", "sandbox-only"}, {"snapshot", "a", "b"}, {"template", "nonsense"}, {"status", "--bogus"},
           {"snapshot", "--name", "-h"}}) {  // -h as a flag's value is no request for help
    std::vector<std::string> args = wrong;
    args.insert(args.end(), {"--socket", socket});
    EXPECT_EQ(run(args), 2) << wrong[0] << ": " << err;
    EXPECT_EQ(out, "") << wrong[0];
    EXPECT_NE(err.find("usage: abx-opensandbox-bridge " + wrong[0]), std::string::npos) << err;
  }
  EXPECT_FALSE(FileExists(socket)) << "a usage error started a bridge";

  // About the running bridge: there is none, said as a sentence; none is started.
  for (const char* command : {"status", "sandboxes", "stop"}) {
    EXPECT_EQ(run({command, "--socket", socket}), 1) << command;
    EXPECT_NE(err.find("no bridge answers at " + socket), std::string::npos) << err;
    EXPECT_EQ(err.find("UNKNOWN"), std::string::npos) << err;
    EXPECT_EQ(err.find("failed to connect"), std::string::npos) << err;
  }
  EXPECT_FALSE(FileExists(socket)) << "status, sandboxes or stop started a bridge";

  // A bridge that cannot be reached or started: why, once, with the command.
  const std::string too_long = socket_dir() + "/" + std::string(120, 'x') + ".sock";
  EXPECT_EQ(run({"template", "list", "--socket", too_long}), 1) << err;
  const std::string why = "a Unix socket address holds";
  EXPECT_EQ(err.rfind("abx-opensandbox-bridge template list: socket path " + too_long, 0), 0u) << err;
  EXPECT_NE(err.find(why), std::string::npos) << err;
  EXPECT_EQ(err.find(why), err.rfind(why)) << "said twice: " << err;

  // Working with the server: a bridge is started on demand, and stays for the next one.
  EXPECT_EQ(run({"template", "list", "--socket", socket}), 0) << err;
  EXPECT_TRUE(FileExists(socket));
  EXPECT_EQ(run({"status", "--socket", socket}), 0) << err;
  EXPECT_NE(out.find("\"socket\":\"" + socket + "\""), std::string::npos) << out;
  EXPECT_EQ(run({"stop", "--socket", socket}), 0) << err;
}

}  // namespace
}  // namespace abx::e2e
