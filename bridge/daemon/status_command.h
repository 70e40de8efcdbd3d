#pragma once
// `abx-opensandbox-bridge status`: the running bridge's counters, as one JSON object.

#include <string>

#include "proto/bridge.pb.h"

namespace abx::daemon {

// Asks the bridge at `socket` (Bridge.Stats) and prints StatusJson. Returns the exit
// code: 1 when no bridge answers.
int PrintStatus(const std::string& socket);

// The object `status` prints: the socket asked, then the reply's fields. Every string
// is JSON-escaped (a socket path may hold any byte but NUL).
std::string StatusJson(const std::string& socket, const abx::opensandbox::v1::StatsReply& reply);

}  // namespace abx::daemon
