#pragma once

// Where a request for a port of a sandbox goes when the server proxy or the ingress
// gateway passes it on: what a pod IP or a container's bridge address is upstream.
// The fake publishes only each sandbox's execd listener, so a port is reached through
// execd's /proxy/<P> (as Docker's endpoints reach it), except execd's own port of a
// real-execd sandbox (reached directly, as upstream's proxy reaches the container's
// port) and a Kubernetes sandbox's egress sidecar (a container port of its own).

#include <string>

#include "tests/fake-opensandbox/fake_config.h"
#include "tests/fake-opensandbox/http_forwarder.h"
#include "tests/fake-opensandbox/sandbox_registry.h"

namespace fake_opensandbox {

// `port` is the port's digits as the route names them; `rest` is the path after the route (raw, "" or beginning with '/'); `raw_query` the
// query with its '?' or "". Only port and path_and_query are set.
ForwardTarget SandboxPortTarget(const SandboxInfo& info, Runtime runtime, const std::string& port, const std::string& rest,
                                const std::string& raw_query);

}  // namespace fake_opensandbox
