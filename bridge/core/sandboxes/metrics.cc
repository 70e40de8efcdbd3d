#include "bridge/core/sandboxes/metrics.h"

namespace abx::core {

Result<opensandbox::SandboxMetrics> Metrics::Sample(const std::string& sandbox_id,
                                                    CancelToken* cancel) {
  auto execd = upstream_->Execd(sandbox_id, *config_, cancel);
  if (!execd.ok()) return execd.error();
  auto sample = execd->Metrics(cancel);
  if (!sample.ok()) return sample.error().Within("sandbox " + sandbox_id);
  return sample;
}

}  // namespace abx::core
