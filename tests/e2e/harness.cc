#include "tests/e2e/harness.h"

#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <set>
#include <stdexcept>
#include <thread>

namespace abx::e2e {
namespace {

std::string Errno(const std::string& what) { return what + ": " + std::strerror(errno); }

bool MakeDir(const std::string& path, std::string* error) {
  if (::mkdir(path.c_str(), 0700) != 0 && errno != EEXIST) {
    *error = Errno("mkdir " + path);
    return false;
  }
  return true;
}

void PrintSection(const std::string& title, const std::string& text) {
  std::fprintf(stderr, "\n===== %s =====\n%s%s", title.c_str(), text.c_str(),
               (!text.empty() && text.back() != '\n') ? "\n" : "");
}

}  // namespace

std::string ExecdProfile() {
  const char* profile = std::getenv("ABX_E2E_EXECD_VERSION");
  return profile ? profile : "";
}

bool ExecdProfileAtLeast(const std::string& version) {
  auto parts = [](const std::string& text) {
    std::vector<int> out;
    std::string v = !text.empty() && (text[0] == 'v' || text[0] == 'V') ? text.substr(1) : text;
    size_t at = 0;
    while (at <= v.size()) {
      size_t dot = v.find('.', at);
      if (dot == std::string::npos) dot = v.size();
      out.push_back(std::atoi(v.substr(at, dot - at).c_str()));
      at = dot + 1;
    }
    return out;
  };
  const std::string profile = ExecdProfile();
  return profile.empty() || parts(profile) >= parts(version);
}

std::string RealExecdTier() {
  const char* tier = std::getenv("ABX_E2E_REAL_EXECD");
  if (!tier || std::string(tier) != "1") return "";
  const std::string profile = ExecdProfile();
  return profile.empty() ? "1.0.19" : profile;
}

std::string RealExecdBinary() {
  const char* dir = std::getenv("ABX_E2E_REAL_EXECD_DIR");
  if (RealExecdTier().empty() || !dir || !*dir) return "";
  const std::string binary = std::string(dir) + "/execd-" + RealExecdTier();
  return ::access(binary.c_str(), X_OK) == 0 ? binary : "";
}

std::vector<std::string> TestEnv::FakeFlags() const { return {"--api-key", kApiKey}; }

void TestEnv::SetUp() {
  char root[] = "/tmp/abxe-XXXXXX";
  ASSERT_NE(::mkdtemp(root), nullptr) << Errno("mkdtemp /tmp/abxe-XXXXXX");
  root_dir_ = root;
  home_dir_ = root_dir_ + "/home";
  socket_dir_ = root_dir_ + "/run";
  logs_dir_ = root_dir_ + "/logs";
  socket_path_ = socket_dir_ + "/bridge.sock";
  std::string error;
  ASSERT_TRUE(MakeDir(home_dir_, &error)) << error;
  ASSERT_TRUE(MakeDir(socket_dir_, &error)) << error;
  ASSERT_TRUE(MakeDir(logs_dir_, &error)) << error;
  if (LiveMode()) {
    live_ = LiveServerFromEnv(&error);
    ASSERT_TRUE(live_.has_value()) << error;
    return;
  }
  if (!RealExecdTier().empty() && RealExecdBinary().empty()) {
    GTEST_SKIP() << "the real-execd tier needs execd-" << RealExecdTier()
                 << " in ABX_E2E_REAL_EXECD_DIR (tools/test sets it when the binaries are there: README.md)";
  }
  ASSERT_TRUE(RestartFake(FakeFlags()));
}

FakeServer& TestEnv::fake() {
  if (!fake_) {
    throw std::logic_error(live() ? "the test uses the fake server, which the live tier does not "
                                    "have: it needs REQUIRE_FAKE"
                                  : "the fake server is not running");
  }
  return *fake_;
}

std::string TestEnv::base_url() const {
  if (live_) return live_->root_url;
  return fake_ ? fake_->base_url() : "http://127.0.0.1:1";
}

std::string TestEnv::api_key() const { return live_ ? live_->api_key : kApiKey; }

bool TestEnv::RestartFake(const std::vector<std::string>& flags) {
  if (live()) {
    ADD_FAILURE() << "RestartFake in the live tier: the test needs REQUIRE_FAKE";
    return false;
  }
  if (fake_) fake_->Stop();
  fake_.reset();
  fake_flags_ = flags;
  bool has_key = false, has_root = false, has_version = false, has_binary = false;
  for (const std::string& flag : flags) {
    has_key |= flag == "--api-key";
    has_root |= flag == "--root";
    has_version |= flag == "--execd-version";
    has_binary |= flag == "--execd-binary";
  }
  // The real-execd tier: every sandbox runs upstream's binary of the suite's release.
  if (!has_binary && !RealExecdBinary().empty()) {
    fake_flags_.push_back("--execd-binary");
    fake_flags_.push_back(RealExecdBinary());
  }
  // The execd release the whole suite runs against (BUILD.bazel's profile targets), where
  // a test does not choose one itself.
  const char* profile = std::getenv("ABX_E2E_EXECD_VERSION");
  if (!has_version && profile && *profile) {
    fake_flags_.push_back("--execd-version");
    fake_flags_.push_back(profile);
  }
  if (!has_key) {
    fake_flags_.push_back("--api-key");
    fake_flags_.push_back(kApiKey);
  }
  // The fake's sandboxes keep their files in this test's own directory.
  if (!has_root) {
    fake_flags_.push_back("--root");
    fake_flags_.push_back(root_dir_ + "/fake-root-" + std::to_string(fake_generation_));
  }
  std::string error;
  std::string log = logs_dir_ + "/fake-" + std::to_string(fake_generation_++) + ".log";
  fake_ = FakeServer::Start(fake_flags_, log, &error);
  EXPECT_NE(fake_, nullptr) << "cannot start the fake OpenSandbox server ("
                            << FakeServerBinary() << "): " << error;
  return fake_ != nullptr;
}

std::vector<std::string> TestEnv::ShimEnv(
    const std::map<std::string, std::optional<std::string>>& overrides) const {
  std::map<std::string, std::string> env = {
      {"PATH", "/usr/bin:/bin"},
      {"HOME", home_dir_},
      {"ABX_OPENSANDBOX_BRIDGE_SOCKET", socket_path_},
      {"ABX_OPENSANDBOX_BRIDGE_BIN", BridgeBinary()},
      {"ABX_OPENSANDBOX_BRIDGE_IDLE_TIMEOUT", "60"},
  };
  if (live_) {
    for (const auto& [name, value] : live_->shim_env) env[name] = value;
  } else {
    env["ABX_OPENSANDBOX_BASE_URL"] = base_url();
    env["ABX_OPENSANDBOX_API_KEY"] = kApiKey;
  }
  // A sanitizer build's options (bazel --config=asan|ubsan|tsan) reach the shim and,
  // through it, the bridge: under TSan a race there then ends that process, which the
  // test sees, instead of going only to a log nobody reads.
  for (const char* name : {"ASAN_OPTIONS", "UBSAN_OPTIONS", "TSAN_OPTIONS"}) {
    if (const char* value = std::getenv(name)) env[name] = value;
  }
  for (const auto& [name, value] : overrides) {
    if (value) {
      env[name] = *value;
    } else {
      env.erase(name);
    }
  }
  std::vector<std::string> out;
  for (const auto& [name, value] : env) out.push_back(name + "=" + value);
  return out;
}

EppSession* TestEnv::StartShim(
    const std::map<std::string, std::optional<std::string>>& overrides) {
  return StartShimUnder({}, overrides);
}

EppSession* TestEnv::StartShimUnder(const std::vector<std::string>& wrapper,
                                    const std::map<std::string, std::optional<std::string>>& overrides,
                                    const std::string& shim_path) {
  std::string error;
  std::string stderr_path =
      logs_dir_ + "/shim-" + std::to_string(shims_.size()) + ".stderr";
  auto session = EppSession::Start(shim_path.empty() ? ShimBinary() : shim_path, ShimEnv(overrides),
                                   stderr_path, &error, wrapper);
  if (!session) {
    ADD_FAILURE() << "cannot start the shim (" << ShimBinary() << "): " << error;
    return nullptr;
  }
  shims_.push_back(std::move(session));
  return shims_.back().get();
}

EppSession* TestEnv::StartInitializedShim(
    const std::map<std::string, std::optional<std::string>>& overrides) {
  EppSession* shim = StartShim(overrides);
  if (!shim) return nullptr;
  MessagePtr response = shim->Initialize();
  if (!response) {
    ADD_FAILURE() << "no answer to initialize within " << kDefaultTimeout.count() << " ms";
    return nullptr;
  }
  if (response->IsError() || !response->result().IsObject()) {
    ADD_FAILURE() << "initialize failed: " << response->raw;
    return nullptr;
  }
  if (auto pid = BridgePid()) bridge_pids_seen_.push_back(*pid);
  return shim;
}

std::string TestEnv::CreateSandbox(EppSession* shim, const std::string& params_json,
                                   Millis timeout) {
  if (live()) timeout = std::max(timeout, Millis(120000));
  MessagePtr response = shim->Request("sandbox.create", params_json, timeout);
  if (!response) {
    ADD_FAILURE() << "no answer to sandbox.create " << params_json << " within "
                  << timeout.count() << " ms";
    return "";
  }
  std::string id = GetString(response->result(), "id");
  std::string state = GetString(response->result(), "state");
  if (response->IsError() || id.empty() || state != "Running") {
    ADD_FAILURE() << "sandbox.create " << params_json << " gave no Running sandbox: "
                  << response->raw;
    return "";
  }
  return id;
}

bool TestEnv::StartShimWithSandbox(EppSession** shim, std::string* sandbox) {
  *shim = StartInitializedShim();
  if (!*shim) return false;
  *sandbox = CreateSandbox(*shim);
  return !sandbox->empty();
}

std::string TestEnv::bridge_log_path() const { return socket_dir_ + "/bridge.log"; }

std::optional<int64_t> TestEnv::UpstreamRequestsDuring(const std::function<void()>& action) {
  std::string error;
  auto first = fake().Stats(&error);
  auto second = fake().Stats(&error);
  if (!first || !second) {
    ADD_FAILURE() << error;
    return std::nullopt;
  }
  auto total = [](const FakeStats& s) { return s.requests + s.execd_requests; };
  const int64_t stats_cost = total(*second) - total(*first);
  action();
  auto after = fake().Stats(&error);
  if (!after) {
    ADD_FAILURE() << error;
    return std::nullopt;
  }
  return total(*after) - total(*second) - stats_cost;
}

std::vector<pid_t> TestEnv::BridgeProcesses() const {
  return FindProcesses({"serve", socket_path_});
}

std::optional<pid_t> TestEnv::BridgePid() const {
  std::string text = ReadFile(lock_path());
  char* end = nullptr;
  long pid = std::strtol(text.c_str(), &end, 10);
  if (end == text.c_str() || pid <= 0) return std::nullopt;
  return static_cast<pid_t>(pid);
}

void TestEnv::StopBridge() {
  std::vector<pid_t> pids = bridge_pids_seen_;
  if (auto pid = BridgePid()) pids.push_back(*pid);
  for (pid_t pid : BridgeProcesses()) pids.push_back(pid);
  if (FileExists(socket_path_) || !pids.empty()) {
    std::string output;
    RunCommand({BridgeBinary(), "stop", "--socket", socket_path_}, ShimEnv(), Millis(5000),
               &output);
  }
  for (pid_t pid : pids) {
    const auto deadline = Clock::now() + Millis(3000);
    while (ProcessAlive(pid) && Clock::now() < deadline) std::this_thread::sleep_for(Millis(20));
    // Only a process that is our bridge: its argv names our socket (a pid may be reused).
    if (ProcessAlive(pid) && ProcessCommandLine(pid).find(socket_path_) != std::string::npos) {
      ::kill(pid, SIGKILL);
      const auto kill_deadline = Clock::now() + Millis(2000);
      while (ProcessAlive(pid) && Clock::now() < kill_deadline) {
        std::this_thread::sleep_for(Millis(10));
      }
    }
  }
}

void TestEnv::KillLiveSandboxes() {
  std::set<std::string> ids;
  for (const auto& shim : shims_) {
    for (const MessagePtr& m : shim->AllMessages()) {
      if (!m->IsResponse() || !m->result().IsObject()) continue;
      const std::string id = GetString(m->result(), "id");
      if (!id.empty() && !GetString(m->result(), "state").empty()) ids.insert(id);
    }
  }
  if (ids.empty()) return;
  EppSession* cleaner = StartInitializedShim();
  if (!cleaner) {
    ADD_FAILURE() << "cannot start a shim to kill this test's sandboxes on the live server";
    return;
  }
  for (const std::string& id : ids) {
    MessagePtr killed = cleaner->Request(
        "sandbox.kill", "{\"sandbox_id\":" + JsonQuote(id) + "}", Millis(60000));
    if (!killed || killed->IsError()) {
      ADD_FAILURE() << "sandbox " << id << " may be left on the live server: "
                    << (killed ? killed->raw : std::string("no answer to sandbox.kill"));
    }
  }
}

void TestEnv::TearDown() {
  if (live_) KillLiveSandboxes();
  std::vector<std::string> shim_exits(shims_.size());
  for (size_t i = 0; i < shims_.size(); ++i) {
    shims_[i]->CloseStdin();
    auto status = shims_[i]->WaitExit(Millis(3000));
    if (!status) {
      ::kill(shims_[i]->pid(), SIGKILL);
      status = shims_[i]->WaitExit(Millis(3000));
      shim_exits[i] = "killed after 3 s without exiting on EOF";
    } else {
      shim_exits[i] = status->ToString();
    }
  }
  if (!root_dir_.empty()) StopBridge();
  if (fake_) fake_->Stop();

  // docs/epp1.md §1: nothing but JSON-RPC objects on stdout, ever.
  for (size_t i = 0; i < shims_.size(); ++i) {
    for (const std::string& violation : shims_[i]->ProtocolViolations()) {
      ADD_FAILURE() << "shim " << i << " wrote a non-JSON-RPC line to stdout: " << violation;
    }
  }

  if (HasFailure() || std::getenv("ABX_E2E_VERBOSE")) {
    for (size_t i = 0; i < shims_.size(); ++i) {
      PrintSection("shim " + std::to_string(i) + " transcript (" + shim_exits[i] + ")",
                   shims_[i]->Transcript());
      PrintSection("shim " + std::to_string(i) + " stderr", ReadFile(shims_[i]->stderr_path(), 8000));
    }
    PrintSection("bridge log " + bridge_log_path(), ReadFile(bridge_log_path(), 12000));
    for (int g = 0; g < fake_generation_; ++g) {
      std::string log = logs_dir_ + "/fake-" + std::to_string(g) + ".log";
      PrintSection("fake log " + log, ReadFile(log, 6000));
    }
  }
  shims_.clear();
  fake_.reset();
  if (!root_dir_.empty() && !std::getenv("ABX_E2E_KEEP_TMP")) {
    std::error_code ec;
    std::filesystem::remove_all(root_dir_, ec);
  }
}

}  // namespace abx::e2e
