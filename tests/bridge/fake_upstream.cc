#include "tests/bridge/fake_upstream.h"

#include <cstdio>
#include <cstdlib>
#include <sstream>
#include <thread>

#include "tests/e2e/process.h"

namespace abx::bridge_test {
namespace {

bool StartsWith(const std::string& text, const char* prefix) {
  return text.rfind(prefix, 0) == 0;
}

}  // namespace

std::vector<TsanReport> TsanReports(const std::string& log) {
  std::vector<TsanReport> reports;
  std::istringstream lines(log);
  std::string line;
  bool in_report = false;
  // Within an access's stack: still looking for the frame that made the access.
  bool in_access = false, placed = false;
  while (std::getline(lines, line)) {
    if (line.find("WARNING: ThreadSanitizer:") != std::string::npos) {
      reports.emplace_back();
      reports.back().summary = line;  // until the SUMMARY line comes
      in_report = true;
      in_access = false;
      continue;
    }
    if (!in_report) continue;
    // An access: "  Read of size 8 at … by thread T3:", "  Previous write of …",
    // "  Atomic read of …"; its stack runs to the next blank line. Other sections
    // ("As if synchronized via sleep", "Location is", "Thread T3 created by") are
    // context, not accesses.
    if (StartsWith(line, "  Read of") || StartsWith(line, "  Write of") ||
        StartsWith(line, "  Previous ") || StartsWith(line, "  Atomic ")) {
      in_access = true;
      placed = false;
    } else if (line.empty()) {
      in_access = false;
    } else if (in_access && !placed && line.find(" #") != std::string::npos) {
      // The access belongs to the first frame, from the top, that is either the fake's
      // own function or inside a shared library, skipping TSan's interceptors and the
      // C++ library's templates compiled into the fake. So a fake handler that calls
      // into cpp-httplib, which then races on its own data, is the library's.
      const size_t open = line.rfind('(');
      std::string module = open == std::string::npos ? "" : line.substr(open + 1);
      if (const size_t slash = module.rfind('/'); slash != std::string::npos) {
        module = module.substr(slash + 1);
      }
      if (StartsWith(module, "libtsan")) continue;
      if (line.find("fake_opensandbox::") != std::string::npos ||
          line.find("tests/fake-opensandbox/") != std::string::npos) {
        reports.back().in_fake_code = true;
        placed = true;
      } else if (StartsWith(module, "lib")) {
        placed = true;  // a shared library's (cpp-httplib, libstdc++)
      }
    } else if (StartsWith(line, "SUMMARY: ThreadSanitizer:")) {
      reports.back().summary = line;
      in_report = in_access = false;
    }
  }
  return reports;
}

core::BridgeCore* FakeUpstreamTest::core() {
  static core::BridgeCore* const kCore = [] {
    auto created = core::BridgeCore::Create();
    if (!created.ok()) {
      std::fprintf(stderr, "BridgeCore::Create: %s\n", created.error().message.c_str());
      std::abort();
    }
    return std::move(created).value().release();
  }();
  return kCore;
}

void FakeUpstreamTest::SetUp() {
  dir_ = std::make_unique<abx::testing::TempDir>("abxfu");
  ASSERT_FALSE(dir_->path().empty()) << "mkdtemp";
  std::string error;
  fake_ = e2e::FakeServer::Start(
      {"--api-key", kKeyA, "--api-key", kKeyB, "--execd-ready-after", "1"}, dir_->path() + "/fake.log",
      &error);
  ASSERT_NE(fake_, nullptr) << error;
}

void FakeUpstreamTest::TearDown() {
  if (!fake_) return;
  const std::string log_path = fake_->log_path();
  fake_.reset();  // SIGTERM: the fake kills its commands and removes its root
  const std::string log = e2e::ReadFile(log_path);
  if (HasFailure()) {
    std::printf("---- fake log %s (last 6000 bytes)\n%s\n----\n", log_path.c_str(),
                log.substr(log.size() > 6000 ? log.size() - 6000 : 0).c_str());
  }
  for (const TsanReport& report : TsanReports(log)) {
    if (report.in_fake_code) {
      ADD_FAILURE() << "ThreadSanitizer found a race in the fake's own code (" << log_path
                    << "): " << report.summary;
    } else {
      std::printf("fake-opensandbox, inside Debian's cpp-httplib (not judged): %s\n",
                  report.summary.c_str());
    }
  }
}

std::map<std::string, std::string> FakeUpstreamTest::Config(const std::string& api_key) const {
  return {{"base_url", fake_->base_url()}, {"api_key", api_key}};
}

bool FakeUpstreamTest::SetFaults(const std::string& json) {
  std::string error;
  const bool ok = fake_->SetFaults(json, &error);
  EXPECT_TRUE(ok) << error;
  return ok;
}

bool FakeUpstreamTest::ClearFaults() {
  std::string error;
  const bool ok = fake_->ClearFaults(&error);
  EXPECT_TRUE(ok) << error;
  return ok;
}

void FakeUpstreamTest::ExpectNoSandboxLeft() {
  std::optional<e2e::FakeStats> stats;
  std::string error;
  const auto deadline = e2e::Clock::now() + e2e::Millis(5000);
  for (;;) {
    stats = fake_->Stats(&error);
    if ((stats && stats->live_sandboxes == 0) || e2e::Clock::now() > deadline) break;
    std::this_thread::sleep_for(e2e::Millis(100));
  }
  ASSERT_TRUE(stats.has_value()) << error;
  EXPECT_EQ(stats->live_sandboxes, 0) << "sandboxes left at the fake";
}

}  // namespace abx::bridge_test
