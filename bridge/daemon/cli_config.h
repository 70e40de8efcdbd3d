#pragma once
// The provider configuration a command of the bridge's CLI sends with its typed calls:
// read from the environment as the shim reads it (ABX_OPENSANDBOX_<FIELD>, then the
// OpenSandbox SDK's own variable), without ~/.abx/config.toml.

#include <google/protobuf/map.h>

#include <string>

namespace abx::daemon {

google::protobuf::Map<std::string, std::string> ConfigFromEnvironment();

}  // namespace abx::daemon
