#pragma once
// One operation of ours and the same done by a direct client, alternated one by one after
// a warm-up, and the row of their medians: the shape of the code and shell rows.

#include <functional>
#include <string>

#include "bench/bench_context.h"
#include "bench/stats.h"

namespace abx::bench {

struct SideBySide {
  Summary ours, base;
  int ours_errors = 0, base_errors = 0;
  std::string error;  // the last failure's text
};

// Each function does one operation and says whether it worked (*error: why not).
SideBySide Alternate(int warmup, int runs, const std::function<bool(std::string*)>& ours,
                     const std::function<bool(std::string*)>& base);

// A row "ours median / base median" met when ≤ `max_ratio` with no error of ours, and a
// note `what`: both summaries and the errors.
void AddMedianRow(BenchContext& ctx, const std::string& row, const std::string& baseline, double max_ratio,
                  const std::string& note_scenario, const std::string& what, const SideBySide& result);

}  // namespace abx::bench
