#pragma once
// Load beside a test: busy processes, one per core, for as long as the object lives. What
// promises an order is tested with it, since a loaded machine reorders what an idle one
// happens to keep in order (threads wake late, pools pick work in another order).

#include <memory>
#include <vector>

#include "tests/e2e/process.h"

namespace abx::e2e {

class CpuHog {
 public:
  // `processes` 0: one per online core.
  explicit CpuHog(int processes = 0);
  ~CpuHog();  // the processes are killed
  CpuHog(const CpuHog&) = delete;
  CpuHog& operator=(const CpuHog&) = delete;

  int running() const { return static_cast<int>(processes_.size()); }

 private:
  std::vector<std::unique_ptr<Process>> processes_;
};

}  // namespace abx::e2e
