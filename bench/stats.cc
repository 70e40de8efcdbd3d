#include "bench/stats.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <numeric>

namespace abx::bench {
namespace {

double NearestRank(const std::vector<double>& sorted, double fraction) {
  const size_t rank = static_cast<size_t>(std::ceil(fraction * static_cast<double>(sorted.size())));
  return sorted[std::min(sorted.size(), std::max<size_t>(rank, 1)) - 1];
}

}  // namespace

Summary Summarize(std::vector<double> samples) {
  Summary s;
  if (samples.empty()) return s;
  std::sort(samples.begin(), samples.end());
  s.count = samples.size();
  s.min = samples.front();
  s.max = samples.back();
  s.median = NearestRank(samples, 0.5);
  s.p99 = NearestRank(samples, 0.99);
  s.mean = std::accumulate(samples.begin(), samples.end(), 0.0) / static_cast<double>(s.count);
  return s;
}

std::string Describe(const Summary& s, const char* unit) {
  char text[200];
  std::snprintf(text, sizeof text, "median %.2f %s, p99 %.2f %s, mean %.2f %s, min %.2f, max %.2f, n=%zu",
                s.median, unit, s.p99, unit, s.mean, unit, s.min, s.max, s.count);
  return text;
}

}  // namespace abx::bench
