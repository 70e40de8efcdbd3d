#pragma once
// The direct baselines' execd calls, on one kept-alive libcurl connection.

#include <cstdint>
#include <string>
#include <string_view>

#include "bench/direct_client.h"

namespace abx::bench {

struct SseRun {
  bool ok = false;          // HTTP 200 and the stream ended with a terminal event
  std::string error;
  uint64_t stream_bytes = 0;
  bool completed = false;   // the terminal event was execution_complete (exit 0)
  long new_connections = 0;
};

// POST /command {"command":…} and read the SSE stream to its end, keeping only its tail.
SseRun RunCommandDirect(DirectClient& client, const std::string& execd_base, const std::string& command);

}  // namespace abx::bench
