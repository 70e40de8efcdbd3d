#pragma once

// End-to-end test harness: runs the real binaries as real processes.
//
//   FakeServer  the fake OpenSandbox server (//tests/fake-opensandbox), on a loopback
//               port it picks itself (`--port 0`), with its control endpoint (/_fake/...).
//   EppSession  one abx-opensandbox-shim process, driven over its stdin/stdout exactly as a
//               host drives it (EPP/1, one JSON-RPC object per line). A reader thread files
//               every stdout line as a response (by id) or a notification (by method and
//               exec_id), so tests wait on what they expect with a timeout and then look at
//               everything that came, in arrival order.
//   TestEnv     the GoogleTest fixture that owns one fake server, the temp dirs (HOME,
//               socket dir, logs), every shim a test starts, and the bridge those shims
//               start; its TearDown stops all of them and, when the test failed, prints
//               what was sent, what came back, the shims' stderr and the bridge's log.
//
// Live tier (live_server.h): with OPENSANDBOX_LIVE=1 no fake is started; shims reach the
// server the environment names, every sandbox a test saw is killed in TearDown, and a
// test (or fixture SetUp) that needs the fake starts with REQUIRE_FAKE("what for").
//
// Every wait takes a timeout: a broken binary makes a test fail, never hang. Children
// are started with posix_spawn from an argv and an explicit environment, never through
// a shell, and never with a secret in argv.

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "tests/e2e/epp_session.h"
#include "tests/e2e/exec_trace.h"
#include "tests/e2e/fake_server.h"
#include "tests/e2e/json_util.h"
#include "tests/e2e/live_server.h"
#include "tests/e2e/process.h"
#include "tests/e2e/runfiles.h"

// Skips the current test in live mode, where there is no fake: for a test that needs one
// of its controls (/_fake/* switches, stats, RestartFake, FakeFlags, its processes or
// files). Use in the test body or at the start of a fixture's SetUp (a SetUp that calls
// a base SetUp first returns when IsSkipped()).
#define REQUIRE_FAKE(why)                                                        \
  if (!::abx::e2e::LiveMode()) {                                                 \
  } else                                                                         \
    GTEST_SKIP() << "needs the fake server (" << (why) << "); the live tier has none"

// Skips the current test when the suite's execd profile (ABX_E2E_EXECD_VERSION, the
// fake's --execd-version; unset: the newest) is older than `version` ("1.0.19"): for a
// test of what only newer execd does. The older profile's own behaviour is tested apart.
#define REQUIRE_EXECD(version, why)                                              \
  if (::abx::e2e::ExecdProfileAtLeast(version)) {                                \
  } else                                                                         \
    GTEST_SKIP() << "needs execd " << (version) << " (" << (why) << "); this run plays " \
                 << ::abx::e2e::ExecdProfile()

// Skips the current test when the suite's sandboxes run upstream's real execd
// (RealExecdTier()): for a test that needs what only the fake's own execd has (a fault
// switch acting inside execd, its counters, its replay endpoint). Each such test also
// runs in the fake-execd tiers.
#define REQUIRE_FAKE_EXECD(why)                                                  \
  if (::abx::e2e::RealExecdTier().empty()) {                                     \
  } else                                                                         \
    GTEST_SKIP() << "needs the fake's own execd (" << (why) << "); this run has the real execd " \
                 << ::abx::e2e::RealExecdTier()

namespace abx::e2e {

// The real-execd tier (ABX_E2E_REAL_EXECD=1): every sandbox of the fake runs upstream's
// execd binary of the suite's release, execd-<ABX_E2E_EXECD_VERSION> in
// ABX_E2E_REAL_EXECD_DIR (tools/test passes the directory). "" outside that tier; the
// release otherwise.
std::string RealExecdTier();
// The binary that tier runs; "" when the directory does not have it.
std::string RealExecdBinary();

// The suite's execd profile ("" for the fake's default, the newest) and whether it is at
// least `version`.
std::string ExecdProfile();
bool ExecdProfileAtLeast(const std::string& version);

class TestEnv : public ::testing::Test {
 public:
  // The API key the fake requires and the shims are given. Distinctive, so a test can
  // search every log and output for it.
  static constexpr char kApiKey[] = "e2e-Secret-7f3a9c1d-KEY";

 protected:
  // Makes /tmp/abxe-XXXXXX/{home,run,logs} and starts the fake with FakeFlags(); in live
  // mode reads the live server from the environment instead (a failure when none).
  void SetUp() override;
  // Ends the shims (stdin closed, then killed), stops the bridge, stops the fake, checks
  // every shim's stdout discipline, prints diagnostics (transcripts, stderr, bridge and
  // fake logs) when the test failed or ABX_E2E_VERBOSE is set, and removes the temp dirs
  // (kept when ABX_E2E_KEEP_TMP is set).
  void TearDown() override;

  // Flags for the fake besides --port 0. Default: {"--api-key", kApiKey}.
  virtual std::vector<std::string> FakeFlags() const;
  // Stops the fake and starts a new one with `flags`, adding `--api-key kApiKey`,
  // `--root <root_dir>/fake-root-N` and `--execd-version $ABX_E2E_EXECD_VERSION` (when
  // set: the suite's execd profile) unless `flags` has them. Shims started afterwards
  // point at it.
  // Not in live mode (a failure there).
  bool RestartFake(const std::vector<std::string>& flags);
  // The fake; throws std::logic_error in live mode, so a test that forgot REQUIRE_FAKE
  // fails there instead of passing.
  FakeServer& fake();

  // OPENSANDBOX_LIVE=1: the server is a real one (or one standing in for it).
  bool live() const { return live_.has_value(); }
  // The server the shims reach, without "/v1": the fake's or the live one.
  std::string base_url() const;
  // The API key the shims are given: kApiKey, or the live server's.
  std::string api_key() const;

  // The environment a shim gets: PATH, HOME, ABX_OPENSANDBOX_BRIDGE_SOCKET,
  // ABX_OPENSANDBOX_BRIDGE_BIN, ABX_OPENSANDBOX_BASE_URL, ABX_OPENSANDBOX_API_KEY,
  // ABX_OPENSANDBOX_BRIDGE_IDLE_TIMEOUT (60, so a leaked bridge goes away by itself); in
  // live mode LiveServer::shim_env instead of the fake's URL and key.
  // `overrides` replace or add entries; a nullopt value removes one.
  std::vector<std::string> ShimEnv(
      const std::map<std::string, std::optional<std::string>>& overrides = {}) const;
  // Starts a shim with ShimEnv(overrides); the fixture owns it until TearDown. Null (with
  // a test failure) when it cannot be started.
  EppSession* StartShim(
      const std::map<std::string, std::optional<std::string>>& overrides = {});
  // The same, run by `wrapper` (e.g. {"/usr/bin/unshare", "-m", …}: the shim is its
  // last argument).
  // `shim_path` (empty: ShimBinary()) is the binary run.
  EppSession* StartShimUnder(const std::vector<std::string>& wrapper,
                             const std::map<std::string, std::optional<std::string>>& overrides = {},
                             const std::string& shim_path = "");
  // StartShim + `initialize`, which must succeed (else a failure and null).
  EppSession* StartInitializedShim(
      const std::map<std::string, std::optional<std::string>>& overrides = {});
  // sandbox.create with `params_json` on `shim`; the id of the Running sandbox, or ""
  // with a test failure. In live mode `timeout` is at least 120 s (a real runtime may
  // still be starting the container).
  std::string CreateSandbox(EppSession* shim,
                            const std::string& params_json = R"({"template":"base"})",
                            Millis timeout = Millis(30000));
  // The set-up many tests share: StartInitializedShim, then CreateSandbox on it. False
  // (with the test failure those report) when either fails.
  bool StartShimWithSandbox(EppSession** shim, std::string* sandbox);

  const std::string& root_dir() const { return root_dir_; }      // /tmp/abxe-XXXXXX
  const std::string& home_dir() const { return home_dir_; }      // root/home
  const std::string& socket_dir() const { return socket_dir_; }  // root/run (0700)
  const std::string& socket_path() const { return socket_path_; }  // root/run/bridge.sock
  std::string lock_path() const { return socket_path_ + ".lock"; }
  std::string bridge_log_path() const;  // root/run/bridge.log
  const std::string& logs_dir() const { return logs_dir_; }

  // How many requests (lifecycle and execd) reached the fake while `action` ran, not
  // counting the stats calls made to find out (their own cost is measured first).
  // nullopt when stats fail.
  std::optional<int64_t> UpstreamRequestsDuring(const std::function<void()>& action);

  // Bridges serving our socket now: live processes whose argv has "serve" and our socket.
  std::vector<pid_t> BridgeProcesses() const;
  // The pid the bridge wrote into its lock file; nullopt when there is none.
  std::optional<pid_t> BridgePid() const;
  // `abx-opensandbox-bridge stop --socket`, then SIGKILL of every bridge pid seen (lock
  // file, BridgeProcesses()) still alive after 3 s, but only when its argv names our
  // socket (a pid may have been reused).
  void StopBridge();

 private:
  std::string root_dir_, home_dir_, socket_dir_, socket_path_, logs_dir_;
  std::vector<std::string> fake_flags_;
  std::unique_ptr<FakeServer> fake_;
  int fake_generation_ = 0;
  std::vector<std::unique_ptr<EppSession>> shims_;
  std::vector<pid_t> bridge_pids_seen_;
  std::optional<LiveServer> live_;

  // Live mode: kills, through a fresh shim, every sandbox any shim of this test was
  // answered with (a result holding "id" and "state"), since a real server is shared and
  // keeps them.
  void KillLiveSandboxes();
};

}  // namespace abx::e2e
