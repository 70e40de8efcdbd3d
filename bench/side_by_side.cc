#include "bench/side_by_side.h"

#include <cstdio>
#include <vector>

#include "bench/clock.h"

namespace abx::bench {

SideBySide Alternate(int warmup, int runs, const std::function<bool(std::string*)>& ours,
                     const std::function<bool(std::string*)>& base) {
  SideBySide out;
  std::vector<double> ours_ms, base_ms;
  for (int i = 0; i < warmup + runs; ++i) {
    Stopwatch t;
    const bool ours_ok = ours(&out.error);
    const double ms = t.ElapsedMs();
    if (!ours_ok) ++out.ours_errors;
    else if (i >= warmup) ours_ms.push_back(ms);
    t.Restart();
    const bool base_ok = base(&out.error);
    const double bms = t.ElapsedMs();
    if (!base_ok) ++out.base_errors;
    else if (i >= warmup) base_ms.push_back(bms);
  }
  out.ours = Summarize(ours_ms);
  out.base = Summarize(base_ms);
  return out;
}

void AddMedianRow(BenchContext& ctx, const std::string& row, const std::string& baseline, double max_ratio,
                  const std::string& note_scenario, const std::string& what, const SideBySide& r) {
  char target[32];
  std::snprintf(target, sizeof target, "≤ %.1f×", max_ratio);
  Row out{row, Ms(r.ours.median), Ms(r.base.median) + " (" + baseline + ")", "", target, "n/a"};
  if (r.ours.count && r.base.count) {
    out.ratio = Times(r.ours.median / r.base.median);
    out.met = Met(r.ours.median / r.base.median <= max_ratio && r.ours_errors == 0);
  }
  ctx.report.Add(out);
  std::string note = what + ": ours " + Describe(r.ours, "ms") + ", direct " + Describe(r.base, "ms");
  if (r.ours_errors + r.base_errors) {
    note += "; errors: ours " + std::to_string(r.ours_errors) + ", direct " + std::to_string(r.base_errors) + " (" +
            r.error + ")";
  }
  ctx.report.Note(note_scenario, note);
}

}  // namespace abx::bench
