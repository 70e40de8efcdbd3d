#pragma once

// Samples one process's resident set size (VmRSS in /proc/<pid>/status) on a thread of
// its own, at a fixed interval, until stopped.

#include <sys/types.h>

#include <atomic>
#include <cstdint>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

#include "tests/e2e/process.h"

namespace abx::soak {

// VmRSS of `pid` in KiB; nullopt when the process is gone or the field is missing.
std::optional<int64_t> ReadRssKiB(pid_t pid);

class RssSampler {
 public:
  RssSampler(pid_t pid, e2e::Millis interval);
  ~RssSampler();  // stops
  void Stop();
  // Every sample taken so far, in KiB, in order.
  std::vector<int64_t> samples() const;

 private:
  const pid_t pid_;
  const e2e::Millis interval_;
  std::atomic<bool> stop_{false};
  mutable std::mutex mutex_;
  std::vector<int64_t> samples_;
  std::thread thread_;
};

// The median of `values` (0 when empty).
int64_t Median(std::vector<int64_t> values);

}  // namespace abx::soak
