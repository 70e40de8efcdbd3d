#pragma once
// What the figures were measured on: cores, CPU model, load, kernel.

#include <string>

namespace abx::bench {

// "2 cores (nproc), AMD EPYC …, Linux 6.1.0, load average 1.23 0.98 0.70"
std::string MachineSummary();
// The 1-minute load average now, as /proc/loadavg gives it.
std::string LoadAverage();

}  // namespace abx::bench
