#pragma once
// Order statistics of a set of samples (latencies in ms, throughputs, ...).

#include <cstddef>
#include <string>
#include <vector>

namespace abx::bench {

struct Summary {
  size_t count = 0;
  double min = 0, median = 0, p99 = 0, max = 0, mean = 0;
};

// Nearest-rank percentiles: p99 of 200 samples is the 198th smallest. Empty → all zero.
Summary Summarize(std::vector<double> samples);

// "median 1.23 ms, p99 4.56 ms, n=200"-style text for the details section.
std::string Describe(const Summary& s, const char* unit);

}  // namespace abx::bench
