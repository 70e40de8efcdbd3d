#pragma once
// Where a scenario's CPU goes: seconds of CPU used by the bridge, the shims, the fake
// server (and the commands it ran), and this driver. On a machine shared with other
// work, CPU seconds say what each part costs when wall time cannot; see
// docs/PERFORMANCE.md, "where the time goes".

#include <sys/types.h>

#include <string>

namespace abx::bench {

// utime + stime of `pid` in seconds; with `reaped_children`, also of the children it
// has waited for (the fake's commands). 0 when unreadable.
double ProcessCpuSeconds(pid_t pid, bool reaped_children);

struct CpuUsage {
  double bridge = 0;
  double children = 0;  // processes this driver started and has reaped: shims, node
  double fake = 0, commands = 0;
  double driver = 0;

  CpuUsage operator-(const CpuUsage& o) const {
    return {bridge - o.bridge, children - o.children, fake - o.fake, commands - o.commands, driver - o.driver};
  }
  CpuUsage& operator+=(const CpuUsage& o) {
    bridge += o.bridge, children += o.children, fake += o.fake, commands += o.commands, driver += o.driver;
    return *this;
  }
  // "CPU s: bridge 1.20, shim 0.80, fake 0.50, fake's commands 0.10, driver 0.30", the
  // children named `children_name`, every figure multiplied by `scale` and named `unit`
  // (per-operation milliseconds: scale = 1000 / operations, unit "ms"); a part that
  // used (next to) nothing is left out.
  std::string Text(const char* children_name = "shim", double scale = 1, const char* unit = "s") const;
};

// The counters now. A child's time counts once it has been reaped.
CpuUsage ReadCpu(pid_t bridge, pid_t fake);

}  // namespace abx::bench
