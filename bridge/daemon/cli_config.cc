#include "bridge/daemon/cli_config.h"

#include <cctype>
#include <cstdlib>

#include "common/config_fields.h"

namespace abx::daemon {

google::protobuf::Map<std::string, std::string> ConfigFromEnvironment() {
  google::protobuf::Map<std::string, std::string> config;
  for (const config::Field& field : config::kFields) {
    const char* value = std::getenv(config::OwnVariable(field).c_str());
    if (!value && field.native_variable) value = std::getenv(field.native_variable);
    if (value && *value) config[field.name] = value;
  }
  return config;
}

}  // namespace abx::daemon
