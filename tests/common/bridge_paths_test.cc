#include "common/bridge_paths.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <string>

#include "gtest/gtest.h"

namespace abx {
namespace {

constexpr char kBuild[] = "0123456789abcdef";

// Sets (or unsets, for null) an environment variable for one test.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) {
    const char* old = getenv(name);
    had_ = old != nullptr;
    if (had_) old_ = old;
    if (value != nullptr) {
      setenv(name, value, 1);
    } else {
      unsetenv(name);
    }
  }
  ~ScopedEnv() {
    if (had_) {
      setenv(name_.c_str(), old_.c_str(), 1);
    } else {
      unsetenv(name_.c_str());
    }
  }

 private:
  std::string name_;
  std::string old_;
  bool had_ = false;
};

std::string TmpFallback() { return "/tmp/abx-opensandbox-" + std::to_string(geteuid()); }

TEST(BridgePathsTest, UsesRuntimeDirWhenUsable) {
  char pattern[] = "/tmp/abxbp-XXXXXX";
  const std::string runtime = mkdtemp(pattern);
  ScopedEnv env("XDG_RUNTIME_DIR", runtime.c_str());
  EXPECT_EQ(DefaultSocketDir(), runtime + "/abx-opensandbox");
  EXPECT_EQ(DefaultSocketPath(kBuild), runtime + "/abx-opensandbox/bridge-0123456789ab.sock");
  rmdir(runtime.c_str());
}

TEST(BridgePathsTest, FallsBackToTmpWhenRuntimeDirIsUnusable) {
  {
    ScopedEnv env("XDG_RUNTIME_DIR", nullptr);
    EXPECT_EQ(DefaultSocketDir(), TmpFallback());
  }
  {
    ScopedEnv env("XDG_RUNTIME_DIR", "/nonexistent/run");
    EXPECT_EQ(DefaultSocketDir(), TmpFallback());
  }
  {
    ScopedEnv env("XDG_RUNTIME_DIR", "relative/dir");
    EXPECT_EQ(DefaultSocketDir(), TmpFallback());
  }
  {
    // Too long for a socket path beneath it.
    const std::string deep = "/tmp/" + std::string(90, 'd');
    mkdir(deep.c_str(), 0700);
    ScopedEnv env("XDG_RUNTIME_DIR", deep.c_str());
    EXPECT_EQ(DefaultSocketDir(), TmpFallback());
    rmdir(deep.c_str());
  }
}

TEST(BridgePathsTest, ExplicitSocketWins) {
  {
    ScopedEnv env(kBridgeSocketEnv, "/tmp/x/my.sock");
    EXPECT_EQ(ResolveSocketPath(kBuild), "/tmp/x/my.sock");
  }
  {
    ScopedEnv env(kBridgeSocketEnv, "");
    ScopedEnv runtime("XDG_RUNTIME_DIR", nullptr);
    EXPECT_EQ(ResolveSocketPath(kBuild), TmpFallback() + "/bridge-0123456789ab.sock");
  }
}

TEST(BridgePathsTest, DerivedPaths) {
  EXPECT_EQ(LockPathFor("/d/bridge-1.sock"), "/d/bridge-1.sock.lock");
  EXPECT_EQ(LogPathFor("/d/bridge-1.sock"), "/d/bridge-1.log");
  EXPECT_EQ(LogPathFor("/d/socket"), "/d/socket.log");
  EXPECT_EQ(SocketPathForBuild("/d/my.sock", kBuild), "/d/my-0123456789ab.sock");
  EXPECT_EQ(SocketPathForBuild("/d/sock", kBuild), "/d/sock-0123456789ab.sock");
  EXPECT_EQ(SocketDirOf("/d/e/s.sock"), "/d/e");
  EXPECT_EQ(SocketDirOf("/s.sock"), "/");
  EXPECT_EQ(SocketDirOf("s.sock"), ".");
}

}  // namespace
}  // namespace abx
