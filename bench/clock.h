#pragma once
// Monotonic time for the benchmark: every figure is a difference of two NowNs() calls.

#include <time.h>

#include <cstdint>

namespace abx::bench {

inline int64_t NowNs() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}

inline double NsToMs(int64_t ns) { return static_cast<double>(ns) / 1e6; }

// Time since construction (or the last Restart), in milliseconds.
class Stopwatch {
 public:
  Stopwatch() : start_(NowNs()) {}
  void Restart() { start_ = NowNs(); }
  double ElapsedMs() const { return NsToMs(NowNs() - start_); }
  double ElapsedS() const { return static_cast<double>(NowNs() - start_) / 1e9; }

 private:
  int64_t start_;
};

}  // namespace abx::bench
