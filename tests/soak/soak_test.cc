// The load soak: 64 shim sessions at once against one bridge and the fake server, for
// ABX_SOAK_SECONDS (default 60; at most 600, inside a large test's 900 s; loopback only),
// each looping over a mix of streamed and collected commands with known output, file
// round trips and lifecycle calls (see workload.h). It then holds the provider to exact
// accounting:
//   - every byte each command wrote arrived once and in order, every file came back
//     byte for byte (each compared with what it must be);
//   - every request got exactly one response, and every stdout line was JSON-RPC;
//   - no sandbox is left on the server once the sessions have killed theirs;
//   - the bridge's memory stayed flat: the median RSS of the last third of the run is
//     at most max(+20%, +8 MiB) over the median of the first third (the run counted
//     from the end of a 20 s warm-up).
// Every session runs at once, with a host's think time between calls; at most
// kCommandSlots commands run at once across them (see CommandSlots in workload.h).
// The memory bound: what the bridge holds beyond its baseline (~25 MiB of libraries,
// gRPC and curl state) is the work in flight: at most kCommandSlots commands' output
// (each ≤ ~0.3 MB) and one file body per session (≤ ~0.7 MB as base64), and the pages
// freed in the last ~0.3 s, which the allocator keeps for reuse
// (bridge/daemon/allocator_jemalloc.cc). Both depend on how much work is in flight, not on
// time. Medians of thirds smooth that; what is left is noise of a few MiB (measured:
// within ~1.5 MiB at ~68 MiB). 8 MiB is a dozen large bodies in flight at once; 20%
// covers the load changing between the thirds (the level follows the throughput). Growth
// with the work done, a leak, exceeds it: 8 MiB over the ~1000 requests between the two
// thirds is ~8 KiB per request, or one leaked copy of every large output.
// ABX_SOAK_SESSIONS (default 64) shrinks the run for a quick local try.

#include <algorithm>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "tests/e2e/harness.h"
#include "tests/soak/rss_sampler.h"
#include "tests/soak/soak_client.h"
#include "tests/soak/workload.h"

namespace abx::soak {
namespace {

using e2e::TestEnv;

// Commands running at once across all sessions (see CommandSlots).
constexpr int kCommandSlots = 8;
// Under AddressSanitizer (freed blocks held in its quarantine) and ThreadSanitizer the
// bridge's RSS measures the sanitizer's allocator, not ours: the memory bound is checked
// in the normal build only; a sanitized run checks everything else and prints the RSS.
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
constexpr bool kRssMeansOurAllocator = false;
#else
constexpr bool kRssMeansOurAllocator = true;
#endif

int EnvInt(const char* name, int fallback, int low, int high) {
  const char* text = std::getenv(name);
  if (text == nullptr || *text == '\0') return fallback;
  return std::clamp(std::atoi(text), low, high);
}

int64_t Percentile(std::vector<int64_t> values, double p) {
  if (values.empty()) return 0;
  std::sort(values.begin(), values.end());
  const size_t at = std::min(values.size() - 1, static_cast<size_t>(p * values.size()));
  return values[at];
}

// All sessions wait here; the last to arrive runs `on_all` before any is released.
class StartLine {
 public:
  StartLine(int parties, std::function<void()> on_all)
      : waiting_(parties), on_all_(std::move(on_all)) {}
  void ArriveAndWait() {
    std::unique_lock<std::mutex> lock(mutex_);
    if (--waiting_ == 0) {
      on_all_();
      released_ = true;
      cv_.notify_all();
      return;
    }
    cv_.wait(lock, [&] { return released_; });
  }

 private:
  std::mutex mutex_;
  std::condition_variable cv_;
  int waiting_;
  bool released_ = false;
  std::function<void()> on_all_;
};

class SoakTest : public TestEnv {};

TEST_F(SoakTest, SixtyFourSessionsHoldExactAccountingAndFlatMemory) {
  const int seconds = EnvInt("ABX_SOAK_SECONDS", 60, 5, 600);
  const int sessions = EnvInt("ABX_SOAK_SESSIONS", 64, 1, 64);
  const int extra_creates = 2;  // per session, besides its own sandbox
  std::fprintf(stderr, "soak: %d sessions for %d s\n", sessions, seconds);

  // 1. Start every shim (the first one starts the bridge) and initialize it.
  std::vector<std::unique_ptr<SoakClient>> clients;
  for (int i = 0; i < sessions; ++i) {
    std::string error;
    auto client = SoakClient::Start(e2e::ShimBinary(), ShimEnv(),
                                    logs_dir() + "/soak-shim-" + std::to_string(i) + ".stderr",
                                    &error);
    ASSERT_NE(client, nullptr) << "shim " << i << ": " << error;
    auto init = client->Call(
        "initialize", R"({"protocol":"EPP/1","host":{"name":"abx","version":"1.4.0"}})",
        Millis(30000));
    ASSERT_TRUE(init && init->HasMember("result"))
        << "shim " << i << " initialize: " << (init ? e2e::ToJson(*init) : "no answer");
    clients.push_back(std::move(client));
  }
  const std::optional<pid_t> bridge = BridgePid();
  ASSERT_TRUE(bridge.has_value()) << "no bridge pid in " << lock_path();

  // 2. Each session creates its sandbox; then all start the mix at once.
  CommandSlots slots(kCommandSlots);
  std::vector<std::unique_ptr<SessionWorkload>> workloads;
  for (int i = 0; i < sessions; ++i) {
    workloads.push_back(
        std::make_unique<SessionWorkload>(clients[i].get(), &slots, i, extra_creates));
  }
  Clock::time_point start, end;
  std::unique_ptr<RssSampler> sampler;
  StartLine ready(sessions, [&] {
    sampler = std::make_unique<RssSampler>(*bridge, Millis(250));
    start = Clock::now();
    end = start + std::chrono::seconds(seconds);
  });
  std::vector<int> prepared(sessions, 0);
  std::vector<std::thread> threads;
  for (int i = 0; i < sessions; ++i) {
    threads.emplace_back([&, i] {
      prepared[i] = workloads[i]->Prepare();
      ready.ArriveAndWait();
      if (prepared[i]) workloads[i]->Run(start, end);
      workloads[i]->Cleanup();
    });
  }
  for (std::thread& t : threads) t.join();
  const auto ran_for = Clock::now() - start;
  std::vector<int64_t> rss;
  if (sampler) {
    sampler->Stop();
    rss = sampler->samples();
  }

  // 3. End the sessions and account for every line.
  std::vector<std::string> accounting;
  int64_t requests = 0, responses = 0, stdout_bytes = 0;
  for (int i = 0; i < sessions; ++i) {
    const std::string exit = clients[i]->Finish(Millis(10000));
    if (exit != "exit 0") {
      accounting.push_back("shim " + std::to_string(i) + " ended " +
                           (exit.empty() ? "only when killed" : exit));
    }
    for (const std::string& problem : clients[i]->AccountingProblems()) {
      accounting.push_back("shim " + std::to_string(i) + ": " + problem);
    }
    requests += clients[i]->requests_sent();
    responses += clients[i]->responses_received();
    stdout_bytes += clients[i]->stdout_bytes();
  }

  // 4. Nothing left on the server.
  int64_t live = -1;
  for (auto until = Clock::now() + Millis(10000); Clock::now() < until;) {
    auto stats = fake().Stats();
    if (stats) live = stats->live_sandboxes;
    if (live == 0) break;
    std::this_thread::sleep_for(Millis(100));
  }

  // 5. The summary.
  SessionReport total;
  for (const auto& w : workloads) {
    const SessionReport& r = w->report();
    total.ops += r.ops;
    total.checked_bytes += r.checked_bytes;
    total.failures += r.failures;
    total.creates += r.creates;
    total.kills += r.kills;
    for (const std::string& m : r.failure_messages) {
      if (total.failure_messages.size() < 40) total.failure_messages.push_back(m);
    }
    for (const auto& [op, values] : r.latency_us) {
      auto& all = total.latency_us[op];
      all.insert(all.end(), values.begin(), values.end());
    }
  }
  // The first 20 s (at most a third of the samples) are the warm-up: 64 sessions
  // creating their sandboxes while the bridge's request threads come into being and the
  // work in flight builds up, a ramp from the idle bridge (~26 MiB at 0 s, ~62 at 10 s,
  // ~66 from 25 s in the runs of 3 December) that says nothing about growth. The thirds
  // are taken of the steady run after it.
  const size_t warm_up = std::min<size_t>(rss.size() / 3, 80);  // samples every 250 ms
  const size_t third = (rss.size() - warm_up) / 3;
  const int64_t first_third = Median({rss.begin() + warm_up, rss.begin() + warm_up + third});
  const int64_t last_third = Median({rss.end() - third, rss.end()});
  const int64_t allowed = first_third + std::max<int64_t>(first_third / 5, 8 * 1024);
  std::string summary = "soak summary: " + std::to_string(sessions) + " sessions, " +
                        std::to_string(std::chrono::duration_cast<Millis>(ran_for).count()) +
                        " ms; " + std::to_string(total.ops) + " ops checked, " +
                        std::to_string(requests) + " requests, " + std::to_string(responses) +
                        " responses, " + std::to_string(total.checked_bytes) +
                        " bytes compared, " + std::to_string(stdout_bytes) +
                        " stdout bytes from the shims; " + std::to_string(total.creates) +
                        " creates, " + std::to_string(total.kills) + " kills, " +
                        std::to_string(live) + " sandboxes left; " +
                        std::to_string(total.failures) + " failed checks, " +
                        std::to_string(accounting.size()) + " accounting problems\n";
  for (const auto& [op, values] : total.latency_us) {
    char line[200];
    std::snprintf(line, sizeof line, "  %-15s n=%-6zu p50=%7.1f ms  p99=%8.1f ms  max=%8.1f ms\n",
                  op.c_str(), values.size(), Percentile(values, 0.50) / 1000.0,
                  Percentile(values, 0.99) / 1000.0, Percentile(values, 1.0) / 1000.0);
    summary += line;
  }
  summary += "  bridge RSS (MiB, every 2 s):";
  for (size_t i = 0; i < rss.size(); i += 8) {
    char value[16];
    std::snprintf(value, sizeof value, " %.1f", rss[i] / 1024.0);
    summary += value;
  }
  char rss_line[200];
  std::snprintf(rss_line, sizeof rss_line,
                "\n  bridge RSS median after the warm-up: first third %.1f MiB, last third %.1f MiB (allowed %.1f)\n",
                first_third / 1024.0, last_third / 1024.0, allowed / 1024.0);
  summary += rss_line;
  std::fprintf(stderr, "%s", summary.c_str());
  if (const char* out_dir = std::getenv("TEST_UNDECLARED_OUTPUTS_DIR")) {
    if (FILE* f = std::fopen((std::string(out_dir) + "/soak_summary.txt").c_str(), "w")) {
      std::fputs(summary.c_str(), f);
      std::fclose(f);
    }
  }

  // 6. The verdict.
  for (int i = 0; i < sessions; ++i) EXPECT_TRUE(prepared[i]) << "session " << i << " made no sandbox";
  EXPECT_EQ(total.failures, 0);
  for (const std::string& m : total.failure_messages) ADD_FAILURE() << m;
  EXPECT_TRUE(accounting.empty());
  for (size_t i = 0; i < accounting.size() && i < 40; ++i) ADD_FAILURE() << accounting[i];
  EXPECT_EQ(requests, responses) << "requests and responses do not pair up";
  EXPECT_EQ(live, 0) << "sandboxes were left on the server";
  EXPECT_EQ(total.creates, total.kills) << "not every created sandbox was killed";
  EXPECT_GT(total.ops, sessions * 10) << "the run did too little to mean anything";
  ASSERT_GE(rss.size(), 12u) << "too few RSS samples of the bridge (pid " << *bridge << ")";
  if (kRssMeansOurAllocator) {
    EXPECT_LE(last_third, allowed) << "the bridge's memory grew during the run";
  }
}

}  // namespace
}  // namespace abx::soak
