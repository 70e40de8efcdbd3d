#pragma once

// Counters behind GET /_fake/stats. Connections are counted when accepted (see
// CountingTaskQueue), so tests can prove that a client reuses its connections.

#include <atomic>
#include <cstdint>

namespace fake_opensandbox {

struct ServerStats {
  std::atomic<uint64_t> connections_accepted{0};        // lifecycle listener
  std::atomic<uint64_t> requests{0};                    // lifecycle requests, /_fake excluded
  std::atomic<uint64_t> auth_rejected{0};  // lifecycle requests refused: key missing or wrong
  std::atomic<uint64_t> execd_connections_accepted{0};  // all execd listeners together
  std::atomic<uint64_t> execd_requests{0};
  // Requests an egress sidecar got with X-EXECD-ACCESS-TOKEN (execd's proxy passes it on;
  // a client that sends it to a pod's sidecar directly gives execd's token away).
  std::atomic<uint64_t> egress_requests_with_execd_token{0};
  // Connections the fake itself opened to execd listeners for the server proxy route;
  // they are included in execd_connections_accepted.
  std::atomic<uint64_t> server_proxy_upstream_connections{0};
  // Requests the ingress gateway (--ingress-gateway) passed on to a sandbox.
  std::atomic<uint64_t> gateway_requests{0};
  std::atomic<uint64_t> gateway_connections_accepted{0};
  // /code runs whose kernel is still working (a client that went away does not end
  // one), and live kernels, across every sandbox.
  std::atomic<int64_t> code_runs_active{0};
  std::atomic<int64_t> kernels_alive{0};
  // Bash session runs whose output pipe is still open: a run ends only once every
  // process that holds it (bash and what bash started) has exited, as upstream's does.
  std::atomic<int64_t> session_runs_active{0};
};

}  // namespace fake_opensandbox
