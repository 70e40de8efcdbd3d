#pragma once
// sandbox.metrics: one sample of a sandbox's CPU and memory, from its execd.

#include <string>

#include "bridge/base/cancel.h"
#include "bridge/base/error.h"
#include "bridge/core/config.h"
#include "bridge/core/endpoint_cache.h"
#include "bridge/opensandbox/execd_metrics.h"

namespace abx::core {

class Metrics {
 public:
  Metrics(EndpointCache* upstream, const ProviderConfig* config) : upstream_(upstream), config_(config) {}

  // Takes about a second: execd samples the CPU before it answers.
  Result<opensandbox::SandboxMetrics> Sample(const std::string& sandbox_id, CancelToken* cancel);

 private:
  EndpointCache* upstream_;
  const ProviderConfig* config_;
};

}  // namespace abx::core
