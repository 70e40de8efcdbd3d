// Concurrency: 64 shim sessions at once, each running 50 `exec.run true` back to back,
// against one session doing the same 50. All sessions initialize first and start
// together; ops/s is all operations over the time from that start to the last answer.
// The bridge's peak RSS over the concurrent run is the memory row: its peak counter is
// reset just before (clear_refs), and a sampler watches VmRSS as well.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <condition_variable>
#include <mutex>
#include <thread>
#include <vector>

#include "bench/clock.h"
#include "bench/cpu_meter.h"
#include "bench/execd_direct.h"
#include "bench/scenarios.h"
#include "bench/stats.h"

namespace abx::bench {
namespace {

struct SessionResult {
  std::vector<double> ms;
  int errors = 0;
  int skipped = 0;  // not started: the time budget was spent
  std::string last_error;
};

// Waits until `count` threads arrived; then all go.
class StartLine {
 public:
  explicit StartLine(int count) : left_(count) {}
  void ArriveAndWait() {
    std::unique_lock<std::mutex> lock(mu_);
    if (--left_ == 0) {
      start_ns_ = NowNs();
      cv_.notify_all();
    }
    cv_.wait(lock, [&] { return left_ == 0; });
  }
  int64_t start_ns() const { return start_ns_; }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  int left_;
  int64_t start_ns_ = 0;
};

void RunSession(const BenchContext& ctx, int ops, StartLine* start, SessionResult* out) {
  const int64_t budget_ns = static_cast<int64_t>(ctx.options.concurrency_budget_s * 1e9);
  ShimSession s;
  std::string error;
  const bool open = ctx.OpenSession(&s, &error);
  start->ArriveAndWait();
  if (!open) {
    out->errors = ops;
    out->last_error = error;
    return;
  }
  const std::string params = ctx.Params("\"command\":\"true\"");
  for (int i = 0; i < ops; ++i) {
    if (NowNs() - start->start_ns() > budget_ns) {
      out->skipped = ops - i;
      break;
    }
    Stopwatch t;
    Answer a = s.Call("exec.run", params, 60000);
    const double ms = t.ElapsedMs();
    if (!a.ok) {
      ++out->errors;
      out->last_error = a.error;
      continue;
    }
    auto code = a.result->FindMember("exit_code");
    if (code == a.result->MemberEnd() || !code->value.IsInt() || code->value.GetInt() != 0) {
      ++out->errors;
      out->last_error = "exit_code is not 0";
      continue;
    }
    out->ms.push_back(ms);
  }
  s.Close();
}

struct Phase {
  double seconds = 0;
  std::vector<double> ms;
  int errors = 0;
  int skipped = 0;
  std::string last_error;
};

Phase RunSessions(const BenchContext& ctx, int sessions, int ops) {
  StartLine start(sessions);
  std::vector<SessionResult> results(static_cast<size_t>(sessions));
  std::vector<std::thread> threads;
  for (int i = 0; i < sessions; ++i) {
    threads.emplace_back(RunSession, std::cref(ctx), ops, &start, &results[static_cast<size_t>(i)]);
  }
  for (std::thread& t : threads) t.join();
  Phase phase;
  // Close() of the last sessions is inside this interval; it is short next to 50 ops.
  phase.seconds = static_cast<double>(NowNs() - start.start_ns()) / 1e9;
  for (SessionResult& r : results) {
    phase.ms.insert(phase.ms.end(), r.ms.begin(), r.ms.end());
    phase.errors += r.errors;
    phase.skipped += r.skipped;
    if (!r.last_error.empty()) phase.last_error = r.last_error;
  }
  return phase;
}

// What the fake itself can do: `sessions` direct libcurl clients, each on its own
// connection, running `true` `ops` times. If this is not well above the shims' ops/s,
// the fake (and the machine) bound the scenario, not the bridge.
Phase RunDirectClients(const BenchContext& ctx, int clients, int ops) {
  StartLine start(clients);
  std::vector<SessionResult> results(static_cast<size_t>(clients));
  std::vector<std::thread> threads;
  for (int i = 0; i < clients; ++i) {
    threads.emplace_back([&, i] {
      DirectClient direct;
      SessionResult& out = results[static_cast<size_t>(i)];
      start.ArriveAndWait();
      for (int k = 0; k < ops; ++k) {
        Stopwatch t;
        SseRun r = RunCommandDirect(direct, ctx.execd_base, "true");
        if (r.ok && r.completed) {
          out.ms.push_back(t.ElapsedMs());
        } else {
          ++out.errors;
          out.last_error = r.error;
        }
      }
    });
  }
  for (std::thread& t : threads) t.join();
  Phase phase;
  phase.seconds = static_cast<double>(NowNs() - start.start_ns()) / 1e9;
  for (SessionResult& r : results) {
    phase.ms.insert(phase.ms.end(), r.ms.begin(), r.ms.end());
    phase.errors += r.errors;
  }
  return phase;
}

}  // namespace

void RunConcurrency(BenchContext& ctx) {
  const int sessions = ctx.options.sessions, ops = ctx.options.ops_per_session;
  const Phase single = RunSessions(ctx, 1, ops);

  const bool reset = ResetPeakRss(ctx.bridge_pid);
  std::atomic<bool> sampling{true};
  long long sampled_peak = ProcStatusBytes(ctx.bridge_pid, "VmRSS");
  std::thread sampler([&] {
    while (sampling) {
      sampled_peak = std::max(sampled_peak, ProcStatusBytes(ctx.bridge_pid, "VmRSS"));
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
  });
  const CpuUsage c0 = ReadCpu(ctx.bridge_pid, ctx.fake.pid());
  const Phase many = RunSessions(ctx, sessions, ops);
  const CpuUsage many_cpu = ReadCpu(ctx.bridge_pid, ctx.fake.pid()) - c0;
  sampling = false;
  sampler.join();
  const long long hwm = reset ? ProcStatusBytes(ctx.bridge_pid, "VmHWM") : -1;
  const long long peak = std::max(hwm, sampled_peak);

  // Fewer operations than the shims ran: a capacity figure, not a latency study.
  const int direct_ops = ctx.options.direct_ops_per_client;
  const CpuUsage c1 = ReadCpu(ctx.bridge_pid, ctx.fake.pid());
  const Phase direct = RunDirectClients(ctx, sessions, direct_ops);
  const CpuUsage direct_cpu = ReadCpu(ctx.bridge_pid, ctx.fake.pid()) - c1;
  const Summary m = Summarize(many.ms), s1 = Summarize(single.ms), d = Summarize(direct.ms);
  const double many_ops = static_cast<double>(many.ms.size()) / many.seconds;
  const double single_ops = static_cast<double>(single.ms.size()) / single.seconds;
  const std::string shape = std::to_string(sessions) + " sessions × " + std::to_string(ops) + " exec.run";
  char text[64];
  std::snprintf(text, sizeof text, "%.0f ops/s", many_ops);
  std::string many_text = text;
  if (many.skipped > 0) {
    many_text += " (" + std::to_string(sessions * ops - many.skipped) + " of " + std::to_string(sessions * ops) +
                 " ops ran in the " + std::to_string(static_cast<int>(ctx.options.concurrency_budget_s)) +
                 " s budget)";
  }
  std::snprintf(text, sizeof text, "%.0f ops/s (1 × %d)", single_ops, ops);
  ctx.report.Add({"concurrency: " + shape + ", throughput", many_text, text, Times(many_ops / single_ops),
                  "≥ 1.5×", Met(many_ops / single_ops >= 1.5)});
  ctx.report.Add({"concurrency: latency p50 / p99", Ms(m.median) + " / " + Ms(m.p99),
                  Ms(s1.median) + " / " + Ms(s1.p99), Times(m.p99 / m.median) + " (p99/p50)", "p99 ≤ 10 × p50",
                  Met(m.p99 <= 10 * m.median)});
  ctx.report.Add({"concurrency: errors", std::to_string(many.errors), std::to_string(single.errors), "", "0",
                  Met(many.errors == 0 && single.errors == 0)});
  ctx.report.Add({"memory: bridge peak RSS during the concurrency run", Mib(static_cast<double>(peak)), "—", "",
                  "≤ 64 MiB", peak > 0 ? Met(peak <= 64LL << 20) : "n/a"});
  std::snprintf(text, sizeof text, "%.1f s", many.seconds);
  ctx.report.Note("concurrency", std::to_string(sessions) + " sessions: " + Describe(m, "ms") + ", " + text +
                                     (many.errors ? ", last error: " + many.last_error : "") +
                                     "; 1 session: " + Describe(s1, "ms") +
                                     (single.errors ? ", last error: " + single.last_error : ""));
  const double direct_ops_s = static_cast<double>(direct.ms.size()) / direct.seconds;
  std::snprintf(text, sizeof text, "%.0f ops/s", direct_ops_s);
  // The fake's own ceiling, in the ratio's terms: a provider that cost nothing could not
  // pass it, since the one-session baseline is measured against the same fake.
  char ceiling[160];
  std::snprintf(ceiling, sizeof ceiling,
                "; that is %.2f× the one session, about the most any provider could reach here; ours made %.0f %% of it",
                direct_ops_s / single_ops, 100 * many_ops / direct_ops_s);
  ctx.report.Note("concurrency", "the fake alone, " + std::to_string(sessions) + " direct libcurl clients × " +
                                     std::to_string(direct_ops) + " runs of true: " + text + ", " +
                                     Describe(d, "ms") + ", " + std::to_string(direct.errors) + " errors" +
                                     (direct.ms.empty() ? "" : ceiling));
  ctx.report.Note("concurrency", "per operation, " + std::to_string(sessions) + " shim sessions: " +
                                     many_cpu.Text("shims", 1000.0 / std::max<size_t>(1, many.ms.size()), "ms") +
                                     "; direct clients: " +
                                     direct_cpu.Text("-", 1000.0 / std::max<size_t>(1, direct.ms.size()), "ms"));
  ctx.report.Note("memory", "bridge peak during the concurrency run: VmHWM after a reset " +
                                (hwm > 0 ? Mib(static_cast<double>(hwm)) : std::string("unavailable")) +
                                ", highest VmRSS sampled every 20 ms " + Mib(static_cast<double>(sampled_peak)));
}

}  // namespace abx::bench
