// Cold start: a new shim process until its `initialize` is answered (the bridge is
// already running), against the start of a bare `node -e ''` process, the least any
// Node-based plugin pays per command. Alternated, so load on the machine hits both alike.
#include <vector>

#include "bench/clock.h"
#include "bench/scenarios.h"
#include "bench/stats.h"

namespace abx::bench {

void RunColdStart(BenchContext& ctx) {
  std::vector<double> ours, node;
  int errors = 0;
  std::string last_error;
  const std::vector<std::string> node_env = CurrentEnvironment({});
  for (int i = 0; i < ctx.options.cold_runs; ++i) {
    {
      ShimSession s;
      std::string error;
      Stopwatch t;
      if (s.Start(ctx.Shim(), &error)) {
        Answer a = s.Initialize(10000);
        const double ms = t.ElapsedMs();
        if (a.ok) {
          ours.push_back(ms);
        } else {
          ++errors;
          last_error = a.error;
        }
        s.Close();
      } else {
        ++errors;
        last_error = error;
      }
    }
    if (!ctx.options.node.empty()) {
      Child c;
      SpawnOptions spawn;
      spawn.argv = {ctx.options.node, "-e", ""};
      spawn.env = node_env;
      std::string error;
      Stopwatch t;
      if (c.Spawn(spawn, &error) && c.Wait(30000) == 0) node.push_back(t.ElapsedMs());
    }
  }
  const Summary o = Summarize(ours), n = Summarize(node);
  Row row{"cold start: new shim → initialize answered (bridge running)", Ms(o.median),
          n.count ? Ms(n.median) + " (node -e '')" : "node not found", "", "≤ 0.15×", "n/a"};
  if (o.count > 0 && n.count > 0) {
    const double ratio = o.median / n.median;
    row.ratio = Times(ratio);
    row.met = Met(ratio <= 0.15);
  }
  ctx.report.Add(row);
  ctx.report.Note("cold start", "shim: " + Describe(o, "ms") + "; node -e '': " + Describe(n, "ms") +
                                    (errors ? "; " + std::to_string(errors) + " failed (" + last_error + ")" : ""));
}

}  // namespace abx::bench
