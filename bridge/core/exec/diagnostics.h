#pragma once
// What provider.doctor asks of a server and of a sandbox's execd: whether the server
// answers and how far its clock is from ours, whether it takes the key, and which of
// execd's two output framings a sandbox runs (README, Output as execd reports it).

#include <cstdint>
#include <string>

#include "bridge/base/cancel.h"
#include "bridge/base/error.h"
#include "bridge/core/config.h"
#include "bridge/core/endpoint_cache.h"

namespace abx::core {

struct ServerProbe {
  Result<int64_t> server_now_ms;  // the server's clock (GET /health), or why it did not answer
  int64_t local_now_ms = 0;       // this host's clock at the middle of that request
  Status auth;                    // an authenticated call accepted, or why not
};
ServerProbe ProbeServer(EndpointCache& cache, const ProviderConfig& config,
                        const CancelToken* cancel);

// Runs a command whose output tells the two execd framings apart: execd >= v1.0.17 sends
// the blank line as an event, <= v1.0.16 drops it. True for the older framing; the
// answer is noted in the cache for `abx-opensandbox-bridge sandboxes`.
Result<bool> ProbeLegacyExecd(EndpointCache& cache, const ProviderConfig& config,
                              const std::string& sandbox_id, CancelToken* cancel);

}  // namespace abx::core
