// Warm exec: `exec.run true` in one long-lived shim session, against a direct libcurl
// client POSTing execd's /command on a kept-alive connection and reading the SSE stream
// to its end. Alternated one by one after a warm-up.
#include <vector>

#include "bench/clock.h"
#include "bench/cpu_meter.h"
#include "bench/execd_direct.h"
#include "bench/scenarios.h"
#include "bench/stats.h"

namespace abx::bench {

void RunWarmExec(BenchContext& ctx) {
  ShimSession s;
  std::string error;
  if (!ctx.OpenSession(&s, &error)) {
    ctx.report.Add({"warm exec: exec.run true in a live session (median)", "session failed: " + error, "", "",
                    "≤ 1.5×", "n/a"});
    return;
  }
  DirectClient direct;
  const std::string params = ctx.Params("\"command\":\"true\"");
  std::vector<double> ours, base;
  int ours_errors = 0, base_errors = 0;
  std::string last_error;
  long base_connections = 0;
  const int warmup = 10;
  CpuUsage ours_cpu, base_cpu;
  const pid_t bridge = ctx.bridge_pid, fake = ctx.fake.pid();
  for (int i = 0; i < warmup + ctx.options.warm_runs; ++i) {
    CpuUsage c0 = ReadCpu(bridge, fake);
    Stopwatch t;
    Answer a = s.Call("exec.run", params, 30000);
    const double ms = t.ElapsedMs();
    CpuUsage c1 = ReadCpu(bridge, fake);
    if (i >= warmup) ours_cpu += c1 - c0;
    if (!a.ok) {
      ++ours_errors;
      last_error = a.error;
    } else if (i >= warmup) {
      ours.push_back(ms);
    }
    t.Restart();
    SseRun r = RunCommandDirect(direct, ctx.execd_base, "true");
    const double bms = t.ElapsedMs();
    if (i >= warmup) base_cpu += ReadCpu(bridge, fake) - c1;
    base_connections += r.new_connections;
    if (!r.ok || !r.completed) {
      ++base_errors;
      last_error = r.error;
    } else if (i >= warmup) {
      base.push_back(bms);
    }
  }
  // The shim's own CPU counts once it is reaped (warm-up included: a small overstatement).
  const CpuUsage before_close = ReadCpu(bridge, fake);
  s.Close();
  ours_cpu.children += (ReadCpu(bridge, fake) - before_close).children;
  const Summary o = Summarize(ours), b = Summarize(base);
  Row median{"warm exec: exec.run true in a live session (median)", Ms(o.median),
             Ms(b.median) + " (libcurl → execd)", "", "≤ 1.5×", "n/a"};
  Row p99{"warm exec (p99)", Ms(o.p99), Ms(b.p99), "", "—", "—"};
  if (o.count && b.count) {
    median.ratio = Times(o.median / b.median);
    median.met = Met(o.median / b.median <= 1.5 && ours_errors == 0);
    p99.ratio = Times(o.p99 / b.p99);
  }
  ctx.report.Add(median);
  ctx.report.Add(p99);
  ctx.report.Note("warm exec", "shim session: " + Describe(o, "ms") + "; direct libcurl: " + Describe(b, "ms") +
                                   "; the direct client opened " + std::to_string(base_connections) +
                                   " connection(s) in all" +
                                   (ours_errors + base_errors ? "; errors: ours " + std::to_string(ours_errors) +
                                                                    ", direct " + std::to_string(base_errors) +
                                                                    " (" + last_error + ")"
                                                              : ""));
  const double scale = 1000.0 / ctx.options.warm_runs;
  ctx.report.Note("warm exec", "per exec.run through the shim, " + ours_cpu.Text("shim", scale, "ms") +
                                   "; per direct command, " + base_cpu.Text("shim", scale, "ms"));
}

}  // namespace abx::bench
