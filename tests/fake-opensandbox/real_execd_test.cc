// A sandbox that runs upstream's real execd (--execd-binary, real_execd.h) keeps what it
// runs to itself: what a command destroys, writes, kills or forks inside one sandbox
// leaves the host and the other sandboxes untouched, and a sandbox that is deleted, that
// expires or whose fake ends leaves no process and no mount behind.
//
// Needs root and the binaries' directory in ABX_E2E_REAL_EXECD_DIR (tools/test passes
// it); skipped otherwise.

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>

#include "tests/fake-opensandbox/test_support.h"

namespace fake_opensandbox {
namespace {

using std::chrono::milliseconds;

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), {});
}

bool Exists(const std::string& path) {
  struct stat st;
  return lstat(path.c_str(), &st) == 0;
}

// Whether any process's mount table names `path` (an overlay or bind of a sandbox).
bool MountedAnywhere(const std::string& path) {
  for (const auto& entry : std::filesystem::directory_iterator("/proc")) {
    const std::string name = entry.path().filename();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    if (ReadFile("/proc/" + name + "/mountinfo").find(path) != std::string::npos) return true;
  }
  return false;
}

// The host's directory of the cpu controller's group that a /proc/PID/cgroup names: cgroup
// v1's "N:cpu[,…]:/path" (the hierarchy mounted at /sys/fs/cgroup/<controllers>), else
// v2's "0::/path".
std::string CpuGroupDir(const std::string& proc_cgroup) {
  std::istringstream lines(proc_cgroup);
  std::string line, unified;
  while (std::getline(lines, line)) {
    const size_t a = line.find(':'), b = line.find(':', a + 1);
    if (b == std::string::npos) continue;
    const std::string controllers = line.substr(a + 1, b - a - 1), path = line.substr(b + 1);
    if (controllers.empty()) unified = "/sys/fs/cgroup" + path;
    std::istringstream names(controllers);
    for (std::string name; std::getline(names, name, ',');) {
      if (name == "cpu") return "/sys/fs/cgroup/" + controllers + path;
    }
  }
  return unified;
}

class RealExecdTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const char* dir = getenv("ABX_E2E_REAL_EXECD_DIR");
    if (geteuid() != 0) GTEST_SKIP() << "a real-execd sandbox needs root";
    if (!dir || access((std::string(dir) + "/execd-1.0.19").c_str(), X_OK) != 0) {
      GTEST_SKIP() << "no execd-1.0.19 in ABX_E2E_REAL_EXECD_DIR";
    }
    FakeConfig config = TestConfig();
    config.execd_binary = std::string(dir) + "/execd-1.0.19";
    config.self_binary = FakeBinaryPath();
    fake_ = std::make_unique<TestFake>(config);
  }

  struct Sandbox {
    std::string id;
    std::string root;  // its directory on the host
    std::unique_ptr<EndpointClient> execd;
  };

  Sandbox Create(const std::string& extra_fields = "") { return Adopt(fake_->CreateSandbox(extra_fields)); }

  // The sandbox `id` once its execd answers.
  Sandbox Adopt(const std::string& id) {
    Sandbox sandbox;
    sandbox.id = id;
    EXPECT_FALSE(sandbox.id.empty());
    if (sandbox.id.empty()) return sandbox;
    sandbox.root = ParseJson(fake_->lifecycle->Get(("/_fake/sandboxes/" + sandbox.id).c_str())->body)["root"]
                       .GetString();
    sandbox.execd = std::make_unique<EndpointClient>(fake_->ExecdEndpoint(sandbox.id));
    // execd answers a moment after the container starts.
    for (int i = 0; i < 200; ++i) {
      auto ping = sandbox.execd->client->Get(sandbox.execd->Path("/ping").c_str());
      if (ping && ping->status == 200) break;
      std::this_thread::sleep_for(milliseconds(20));
    }
    return sandbox;
  }

  // Runs `command` in the sandbox (as `uid` when >= 0); its stdout lines joined by "\n".
  std::string Run(const Sandbox& sandbox, const std::string& command, int uid = -1) {
    std::string body = "{\"command\":" + JsonQuoted(command) + (uid >= 0 ? ",\"uid\":" + std::to_string(uid) : "") + "}";
    auto res = sandbox.execd->client->Post(sandbox.execd->Path("/command").c_str(), body, "application/json");
    if (!res || res->status != 200) return "<no answer>";
    std::string out;
    for (const std::string& line : OutputTexts(ParseEvents(res->body), "stdout")) out += (out.empty() ? "" : "\n") + line;
    return out;
  }

  std::unique_ptr<TestFake> fake_;
};

TEST_F(RealExecdTest, WhatASandboxRunsLeavesTheHostAndOtherSandboxesAlone) {
  Sandbox a = Create(), b = Create();
  ASSERT_TRUE(a.execd && b.execd);
  // What must survive: a file of the host's /tmp, a host process, the other sandbox's files.
  const std::string marker = "/tmp/abx-isolation-" + std::to_string(getpid());
  { std::ofstream(marker) << "host"; }
  const std::string host_sleeper_arg = "300." + std::to_string(getpid());
  const std::string host_sleeper = "sleep " + host_sleeper_arg;
  pid_t sleeper = fork();
  if (sleeper == 0) {
    execlp("sleep", "sleep", host_sleeper_arg.c_str(), nullptr);
    _exit(127);
  }
  EXPECT_EQ(Run(b, "echo b > /tmp/b-file && echo b > /root/b-file && echo ok"), "ok");

  // It is root, with a root of its own: /tmp and /root are its own, /etc writes stay in
  // its directory.
  EXPECT_EQ(Run(a, "id -u"), "0");
  EXPECT_EQ(Run(a, "stat -c %a /tmp"), "1777");
  // (execd keeps a command's output in files of /tmp: this one's is lost with them.)
  Run(a, "rm -rf /tmp/* /root/* /tmp/.[!.]* 2>/dev/null; echo x > /etc/x; echo y > /usr/y");
  EXPECT_EQ(Run(a, "cat /etc/x /usr/y"), "x\ny");
  EXPECT_TRUE(Exists(marker)) << "a sandbox's rm -rf /tmp/* reached the host's /tmp";
  EXPECT_FALSE(Exists("/etc/x"));
  EXPECT_FALSE(Exists("/usr/y"));
  EXPECT_EQ(ReadFile(a.root + "/etc/x"), "x\n") << "its writes are kept in its own directory";
  EXPECT_EQ(Run(a, "test -e " + marker + " && echo seen || echo unseen"), "unseen")
      << "the host's /tmp is visible in the sandbox";

  // A fork loop bounded by a ulimit (of an unprivileged user: root is exempt from it),
  // its processes counted with shell builtins only (no fork is left to count with).
  const std::string forked = Run(
      a, "(ulimit -u 40; for i in $(seq 300); do sleep 5 & done) >/dev/null 2>&1 & sleep 1.5; n=0; "
         "for f in /proc/[0-9]*/status; do while read -r k v rest; do if [ \"$k\" = Uid: ]; then "
         "[ \"$v\" = 65534 ] && n=$((n+1)); break; fi; done < \"$f\"; done; echo $n",
      65534);
  EXPECT_GE(std::atoi(forked.c_str()), 10) << forked;
  EXPECT_LE(std::atoi(forked.c_str()), 42) << forked;

  // kill -9 -1 as the sandbox's root ends the sandbox's own processes, nothing else.
  Run(a, "kill -9 -1");
  std::this_thread::sleep_for(milliseconds(300));
  EXPECT_TRUE(ProcessRunning(host_sleeper)) << "a sandbox's kill -9 -1 reached the host";
  EXPECT_EQ(Run(b, "cat /tmp/b-file /root/b-file"), "b\nb") << "the other sandbox lost its files";
  EXPECT_EQ(Run(b, "echo alive"), "alive") << "the other sandbox's execd was killed";
  kill(sleeper, SIGKILL);
  waitpid(sleeper, nullptr, 0);
  unlink(marker.c_str());
}

TEST_F(RealExecdTest, ADeletedOrExpiredSandboxOrAnEndedFakeLeavesNoProcessAndNoMount) {
  Sandbox deleted = Create(), expiring = Create("\"timeout\":600"), last = Create();
  ASSERT_TRUE(deleted.execd && expiring.execd && last.execd);
  auto start = [this](const Sandbox& sandbox, const std::string& sleeper) {
    Run(sandbox, "nohup " + sleeper + " >/dev/null 2>&1 & echo started");
    for (int i = 0; i < 100 && !ProcessRunning(sleeper); ++i) std::this_thread::sleep_for(milliseconds(20));
    EXPECT_TRUE(ProcessRunning(sleeper));
  };
  const std::string tag = std::to_string(getpid());
  start(deleted, "sleep 400." + tag + "1");
  start(expiring, "sleep 400." + tag + "2");
  start(last, "sleep 400." + tag + "3");
  ASSERT_TRUE(MountedAnywhere(deleted.root)) << "the sandbox's overlays are not where this test looks";

  auto res = fake_->lifecycle->Delete(("/v1/sandboxes/" + deleted.id).c_str());
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 204);
  EXPECT_FALSE(ProcessRunning("sleep 400." + tag + "1"));
  EXPECT_FALSE(MountedAnywhere(deleted.root));

  // Renewed to expire two seconds from now (the fake's clock is this one: no skew).
  res = fake_->lifecycle->Get(("/v1/sandboxes/" + expiring.id).c_str());
  ASSERT_TRUE(res);
  const auto soon = std::chrono::system_clock::now() + std::chrono::seconds(2);
  const std::time_t t = std::chrono::system_clock::to_time_t(soon);
  char when[64];
  std::strftime(when, sizeof when, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&t));
  res = fake_->lifecycle->Post(("/v1/sandboxes/" + expiring.id + "/renew-expiration").c_str(),
                               std::string("{\"expiresAt\":\"") + when + "\"}", "application/json");
  ASSERT_TRUE(res);
  ASSERT_EQ(res->status, 200) << res->body;
  for (int i = 0; i < 250 && ProcessRunning("sleep 400." + tag + "2"); ++i) std::this_thread::sleep_for(milliseconds(20));
  EXPECT_FALSE(ProcessRunning("sleep 400." + tag + "2"));
  EXPECT_FALSE(MountedAnywhere(expiring.root));

  fake_.reset();
  EXPECT_FALSE(ProcessRunning("sleep 400." + tag + "3"));
  EXPECT_FALSE(MountedAnywhere(last.root));
}

// Its egress sidecar is at 127.0.0.1:18080 of its own network, where execd's /proxy/18080
// (and a program in the sandbox) reaches it.
TEST_F(RealExecdTest, ItsEgressSidecarIsInItsOwnNetwork) {
  Sandbox sandbox = Create(R"("networkPolicy":{"egress":[{"action":"allow","target":"pypi.org"}]})");
  auto endpoint = ParseJson(fake_->lifecycle->Get(("/v1/sandboxes/" + sandbox.id + "/endpoints/18080").c_str())->body);
  const std::string token = endpoint["headers"]["OPENSANDBOX-EGRESS-AUTH"].GetString();
  EndpointClient sidecar(endpoint["endpoint"].GetString());
  auto policy = sidecar.client->Get(sidecar.Path("/policy").c_str(), {{"OPENSANDBOX-EGRESS-AUTH", token}});
  ASSERT_TRUE(policy);
  EXPECT_EQ(policy->status, 200) << policy->body;
  EXPECT_NE(policy->body.find("pypi.org"), std::string::npos);
  EXPECT_EQ(Run(sandbox, "exec 3<>/dev/tcp/127.0.0.1/18080 && printf 'GET /healthz HTTP/1.0\\r\\n\\r\\n' >&3 && tail -c 2 <&3"), "ok");
  Sandbox plain = Create();
  EXPECT_EQ(Run(plain, "(exec 3<>/dev/tcp/127.0.0.1/18080) 2>/dev/null && echo open || echo closed"), "closed");
}

TEST_F(RealExecdTest, ItsCpuLimitHoldsEveryProcessItStartsAndGoesWithIt) {
  // Where the host lets nobody make a group, the fake runs sandboxes without their limit
  // (sandbox_cgroup.h) and there is nothing to check.
  if (access("/sys/fs/cgroup/cpu/cpu.cfs_quota_us", F_OK) == 0 ? access("/sys/fs/cgroup/cpu", W_OK) != 0
                                                                 : access("/sys/fs/cgroup/cgroup.subtree_control", W_OK) != 0) {
    GTEST_SKIP() << "this host has no cpu controller the fake may use";
  }
  // A tenth of a core, as Docker applies resourceLimits.cpu "100m" (nano_cpus).
  auto res = fake_->lifecycle->Post(
      "/v1/sandboxes",
      R"({"image":{"uri":"python:3.11"},"entrypoint":["tail","-f","/dev/null"],)"
      R"("resourceLimits":{"cpu":"100m","memory":"2Gi"}})",
      "application/json");
  ASSERT_TRUE(res);
  ASSERT_EQ(res->status, 202) << res->body;
  Sandbox limited = Adopt(ParseJson(res->body)["id"].GetString());
  ASSERT_TRUE(limited.execd);
  const std::string group = CpuGroupDir(Run(limited, "cat /proc/self/cgroup"));
  ASSERT_NE(group.find("fake-opensandbox-"), std::string::npos)
      << "a command of the sandbox is not in a group of its own: " << group;
  if (Exists(group + "/cpu.cfs_quota_us")) {
    EXPECT_EQ(ReadFile(group + "/cpu.cfs_quota_us"), "10000\n");
    EXPECT_EQ(ReadFile(group + "/cpu.cfs_period_us"), "100000\n");
  } else {
    EXPECT_EQ(ReadFile(group + "/cpu.max"), "10000 100000\n");
  }
  // A busy loop in it is held to its quota: the kernel throttles the group.
  EXPECT_EQ(Run(limited, "timeout 1 sh -c 'while :; do :; done'; echo looped"), "looped");
  const std::string stat = ReadFile(group + "/cpu.stat");
  const size_t at = stat.find("nr_throttled ");
  ASSERT_NE(at, std::string::npos) << stat;
  EXPECT_GT(std::atol(stat.c_str() + at + 13), 0) << stat;

  res = fake_->lifecycle->Delete(("/v1/sandboxes/" + limited.id).c_str());
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 204);
  EXPECT_FALSE(Exists(group)) << "the sandbox's group outlived it";
}

// When the container's main process (bootstrap.sh, then the entrypoint) ends, Docker
// reports the container exited, and so does the fake: exit 0 is Terminated, any other
// code Failed with it, a missing program 127.
TEST_F(RealExecdTest, AnEntrypointThatEndsEndsTheSandboxAsDockerReportsIt) {
  const struct {
    const char* entrypoint;
    const char* state;
    const char* reason;
    const char* message;
  } cases[] = {
      {R"(["true"])", "Terminated", "CONTAINER_EXITED", "Sandbox container exited successfully."},
      {R"(["sh","-c","exit 3"])", "Failed", "CONTAINER_EXITED_ERROR", "Sandbox container exited with code 3."},
      {R"(["no-such-program"])", "Failed", "CONTAINER_EXITED_ERROR", "Sandbox container exited with code 127."},
  };
  for (const auto& c : cases) {
    auto res = fake_->lifecycle->Post("/v1/sandboxes",
                                      std::string(R"({"image":{"uri":"python:3.11"},"entrypoint":)") + c.entrypoint +
                                          R"(,"resourceLimits":{"cpu":"1","memory":"2Gi"}})",
                                      "application/json");
    ASSERT_TRUE(res);
    ASSERT_EQ(res->status, 202) << res->body;
    const std::string id = ParseJson(res->body)["id"].GetString();
    rapidjson::Document got;
    for (int i = 0; i < 500; ++i) {
      got = ParseJson(fake_->lifecycle->Get(("/v1/sandboxes/" + id).c_str())->body);
      if (std::string(got["status"]["state"].GetString()) != "Running") break;
      std::this_thread::sleep_for(milliseconds(20));
    }
    EXPECT_STREQ(got["status"]["state"].GetString(), c.state) << c.entrypoint;
    EXPECT_STREQ(got["status"]["reason"].GetString(), c.reason) << c.entrypoint;
    EXPECT_STREQ(got["status"]["message"].GetString(), c.message) << c.entrypoint;
    res = fake_->lifecycle->Delete(("/v1/sandboxes/" + id).c_str());
    ASSERT_TRUE(res);
    EXPECT_EQ(res->status, 204);
  }
}

}  // namespace
}  // namespace fake_opensandbox
