// One CLI command: what `abx exec` costs end to end when every command is a new process.
// Ours: a new shim, initialize, exec.run `true`, shutdown/exit, the process gone.
// Baseline: a new node process running the official OpenSandbox JS SDK (connect to the
// sandbox, run `true`), as a per-command plugin built on it would. The two alternate, and
// the fake's connection counters are read around every command, so each side's upstream
// connections are counted apart: the connection-reuse row.
#include <algorithm>
#include <fstream>
#include <vector>

#include <rapidjson/document.h>

#include "bench/clock.h"
#include "bench/cpu_meter.h"
#include "bench/scenarios.h"
#include "bench/stats.h"

namespace abx::bench {
namespace {

std::string ExecdRequests(const BenchContext& ctx, long long n) {
  return ctx.execd_requests_counted() ? std::to_string(n) + " execd requests"
                                      : "execd requests (not counted: a real execd sits behind a byte relay)";
}

std::string LastLine(const std::string& path) {
  std::ifstream in(path);
  std::string line, last;
  while (std::getline(in, line)) {
    if (!line.empty()) last = line;
  }
  return last;
}

struct Counted {
  std::vector<double> ms;
  int errors = 0;
  std::string last_error;
  long long lifecycle_connections = 0, execd_connections = 0;
  long long lifecycle_requests = 0, execd_requests = 0;
  CpuUsage cpu;
};

void AddDelta(const FakeStats& before, const FakeStats& after, Counted* c) {
  c->lifecycle_connections += after.connections_accepted - before.connections_accepted;
  c->execd_connections += after.execd_connections_accepted - before.execd_connections_accepted;
  c->lifecycle_requests += after.requests - before.requests;
  c->execd_requests += after.execd_requests - before.execd_requests;
}

// One shim command; "" when it went well, else why not.
std::string OneShimCommand(const BenchContext& ctx) {
  ShimSession s;
  std::string error;
  if (!s.Start(ctx.Shim(), &error)) return error;
  Answer init = s.Initialize(10000);
  if (!init.ok) return "initialize: " + init.error;
  Answer run = s.Call("exec.run", ctx.Params("\"command\":\"true\""), 30000);
  if (!run.ok) return "exec.run: " + run.error;
  auto code = run.result->FindMember("exit_code");
  if (code == run.result->MemberEnd() || !code->value.IsInt() || code->value.GetInt() != 0) {
    return "exec.run: exit_code is not 0";
  }
  const int exit_code = s.Close(5000);
  if (exit_code != 0) return "the shim exited " + std::to_string(exit_code);
  return "";
}

}  // namespace

void RunCliCommands(BenchContext& ctx) {
  const int runs = ctx.options.cli_runs;
  Counted ours, sdk;
  const std::string sdk_log = ctx.LogPath("node-sdk");
  std::vector<std::string> sdk_env = CurrentEnvironment({"OPEN_SANDBOX_", "ABX_", "OPENSANDBOX_", "BENCH_"});
  sdk_env.push_back("OPEN_SANDBOX_DOMAIN=" + ctx.fake.address());
  sdk_env.push_back("OPEN_SANDBOX_API_KEY=" + ctx.api_key);
  sdk_env.push_back("OPENSANDBOX_DISABLE_METRICS=1");
  sdk_env.push_back("BENCH_SANDBOX_ID=" + ctx.sandbox_id);
  const std::string script = ctx.options.sdk_dir + "/sdk_run_true.mjs";
  int sdk_failures_in_a_row = 0;
  bool sdk_given_up = ctx.options.node.empty();
  if (sdk_given_up) sdk.last_error = "node not found";
  bool sdk_budget_spent = false;
  double sdk_spent_s = 0;
  std::string stats_error;
  bool counters_ok = true;

  for (int i = 0; i < runs; ++i) {
    FakeStats before, after;
    counters_ok &= ctx.fake.Stats(&before, &stats_error);
    CpuUsage c0 = ReadCpu(ctx.bridge_pid, ctx.fake.pid());
    Stopwatch t;
    const std::string error = OneShimCommand(ctx);
    const double ms = t.ElapsedMs();
    ours.cpu += ReadCpu(ctx.bridge_pid, ctx.fake.pid()) - c0;
    counters_ok &= ctx.fake.Stats(&after, &stats_error);
    AddDelta(before, after, &ours);
    if (error.empty()) {
      ours.ms.push_back(ms);
    } else {
      ++ours.errors;
      ours.last_error = error;
    }

    if (sdk_given_up || sdk_budget_spent) continue;
    counters_ok &= ctx.fake.Stats(&before, &stats_error);
    Child node;
    SpawnOptions spawn;
    spawn.argv = {ctx.options.node, script};
    spawn.env = sdk_env;
    spawn.stderr_path = sdk_log;
    std::string spawn_error;
    c0 = ReadCpu(ctx.bridge_pid, ctx.fake.pid());
    Stopwatch ts;
    int code = -1;
    if (node.Spawn(spawn, &spawn_error)) code = node.Wait(60000);
    const double sdk_ms = ts.ElapsedMs();
    sdk.cpu += ReadCpu(ctx.bridge_pid, ctx.fake.pid()) - c0;
    sdk_spent_s += sdk_ms / 1000;
    // A node process costs far more than a shim: on a slow or busy machine 200 of them
    // alone would blow the run's five minutes. The median needs far fewer samples.
    if (sdk_spent_s > ctx.options.sdk_budget_s && static_cast<int>(sdk.ms.size()) + 1 >= ctx.options.sdk_min_runs) {
      sdk_budget_spent = true;
    }
    counters_ok &= ctx.fake.Stats(&after, &stats_error);
    AddDelta(before, after, &sdk);
    if (code == 0) {
      sdk.ms.push_back(sdk_ms);
      sdk_failures_in_a_row = 0;
    } else {
      ++sdk.errors;
      sdk.last_error = spawn_error.empty() ? "exit " + std::to_string(code) + ": " + LastLine(sdk_log) : spawn_error;
      // An SDK that cannot work against this server gets no figure, not 200 failures.
      if (++sdk_failures_in_a_row >= 3 && sdk.ms.empty()) sdk_given_up = true;
    }
  }

  const Summary o = Summarize(ours.ms), b = Summarize(sdk.ms);
  Row row{"one CLI command ×" + std::to_string(runs) + ": shim initialize + exec.run true + exit (median)",
          Ms(o.median), "", "", "≤ 0.25×", "n/a"};
  if (b.count > 0) {
    row.baseline = Ms(b.median) + " (JS SDK in a new node, n=" + std::to_string(b.count) + ")";
    if (o.count > 0) {
      const double ratio = o.median / b.median;
      row.ratio = Times(ratio);
      row.met = Met(ratio <= 0.25 && ours.errors == 0);
    }
  } else {
    row.baseline = "SDK failed: " + sdk.last_error;
  }
  if (ours.errors) row.ours += " (" + std::to_string(ours.errors) + " failed)";
  ctx.report.Add(row);
  ctx.report.Note("one CLI command",
                  "shim: " + Describe(o, "ms") + ", total " + Ms(o.mean * static_cast<double>(o.count)) +
                      (ours.errors ? ", " + std::to_string(ours.errors) + " failed (" + ours.last_error + ")" : ""));
  ctx.report.Note("one CLI command",
                  "JS SDK 0.1.11 (Sandbox.connect + commands.run in a new node): " + Describe(b, "ms") +
                      (sdk.errors ? ", " + std::to_string(sdk.errors) + " failed (" + sdk.last_error + ")" : "") +
                      (sdk_budget_spent ? "; stopped after " + std::to_string(sdk.ms.size() + sdk.errors) +
                                              " runs, its time budget of " +
                                              std::to_string(static_cast<int>(ctx.options.sdk_budget_s)) + " s spent"
                                        : ""));

  ctx.report.Note("one CLI command",
                  "per command: shim path " + ours.cpu.Text("shim", 1000.0 / std::max<size_t>(1, o.count + ours.errors), "ms") +
                      "; JS SDK " + sdk.cpu.Text("node", 1000.0 / std::max<size_t>(1, b.count + sdk.errors), "ms"));
  const long long total = ours.lifecycle_connections + ours.execd_connections;
  Row reuse{"connection reuse: upstream TCP connections the fake accepted in " + std::to_string(runs) +
                " CLI commands",
            std::to_string(total), std::to_string(runs) + " (1 per command)", "", "≤ 4 in total", "n/a"};
  if (counters_ok) {
    reuse.ratio = Times(static_cast<double>(total) / runs);
    reuse.met = Met(total <= 4);
  } else {
    reuse.ours = "counters unreadable: " + stats_error;
  }
  ctx.report.Add(reuse);
  ctx.report.Note("connection reuse",
                  "ours: " + std::to_string(ours.lifecycle_connections) + " lifecycle + " +
                      std::to_string(ours.execd_connections) + " execd connections for " +
                      std::to_string(ours.lifecycle_requests) + " lifecycle + " +
                      ExecdRequests(ctx, ours.execd_requests));
  ctx.report.Note("connection reuse",
                  "JS SDK, measured: " + std::to_string(sdk.lifecycle_connections) + " lifecycle + " +
                      std::to_string(sdk.execd_connections) + " execd connections for " +
                      std::to_string(sdk.lifecycle_requests) + " lifecycle + " +
                      ExecdRequests(ctx, sdk.execd_requests) + " in " +
                      std::to_string(sdk.ms.size() + sdk.errors) + " runs");
}

}  // namespace abx::bench
