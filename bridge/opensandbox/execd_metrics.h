#pragma once
// execd's GET /metrics (docs/opensandbox.md §2.12): one sample of the sandbox's CPU and
// memory as execd sees them. execd samples the CPU over about a second before it
// answers.

#include <cstdint>
#include <string>

#include "bridge/base/error.h"

namespace abx::opensandbox {

struct SandboxMetrics {
  double cpu_count = 0;      // CPUs execd's runtime may use (follows a CPU quota)
  double cpu_used_pct = 0;   // 0–100
  double mem_total_mib = 0;  // as /proc/meminfo inside the sandbox shows it
  double mem_used_mib = 0;
  int64_t timestamp_ms = 0;  // execd's clock
};

// The answer's body; E8010 when it is not execd's metrics object (every field a number).
Result<SandboxMetrics> DecodeMetrics(const std::string& body);

}  // namespace abx::opensandbox
