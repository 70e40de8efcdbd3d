#pragma once

// The GoogleTest fixture of the in-process concurrency tests (tests/bridge/api/epp,
// tests/bridge/core): the real fake OpenSandbox server as a child process (two API keys,
// so callers can hold different credentials), and the one core::BridgeCore every caller
// in the test binary shares.
//
// ThreadSanitizer and the fake. The fake is built in the test's configuration (Bazel
// builds a test's data that way), so under --config=tsan it runs instrumented too, but
// without the test's TSAN_OPTIONS: it logs reports to its log and keeps serving. Its
// HTTP layer is Debian's cpp-httplib, not instrumented, whose own synchronisation TSan
// cannot see (its thread pool, the function-local static regexes it parses with), so a
// report whose accesses are made inside that library is listed in the test output and
// does not fail the test. A report with an access made by the fake's own code (the
// first frame from the top, past TSan's interceptors and C++ library templates, is the
// fake's) does fail it: that is a race in the fake, which would make every test that
// uses it unreliable. Reports of bridge code cannot arise in the fake's process at all;
// the bridge runs in the test process, where halt_on_error=1 ends the test at the first.

#include <map>
#include <memory>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "bridge/core/bridge_core.h"
#include "tests/common/temp_dir.h"
#include "tests/e2e/fake_server.h"

namespace abx::bridge_test {

// One ThreadSanitizer report found in a log.
struct TsanReport {
  std::string summary;        // its SUMMARY line
  bool in_fake_code = false;  // an access was made by tests/fake-opensandbox's code
};
std::vector<TsanReport> TsanReports(const std::string& log);

class FakeUpstreamTest : public ::testing::Test {
 public:
  static constexpr char kKeyA[] = "tsan-Key-A-5c1e9b27";
  static constexpr char kKeyB[] = "tsan-Key-B-81d4f0a3";

 protected:
  void SetUp() override;
  // Stops the fake, prints its log when the test failed, and judges the ThreadSanitizer
  // reports in it (see above).
  void TearDown() override;

  // The core, created once and never destroyed, as the bridge keeps its core for its
  // whole life (destroying it would wait for the interrupts of cancelled commands still
  // running: BridgeCore::RunInBackground).
  static core::BridgeCore* core();

  // A caller's configuration (field → raw text, as a shim resolves it) for the fake.
  std::map<std::string, std::string> Config(const std::string& api_key) const;

  bool SetFaults(const std::string& json);
  bool ClearFaults();
  // The fake holds no live sandbox (waits up to a few seconds for kills in flight).
  void ExpectNoSandboxLeft();

  e2e::FakeServer& fake() { return *fake_; }

 private:
  std::unique_ptr<abx::testing::TempDir> dir_;  // the fake's log
  std::unique_ptr<e2e::FakeServer> fake_;
};

}  // namespace abx::bridge_test
