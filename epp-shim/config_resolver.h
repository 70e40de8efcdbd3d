#pragma once

// The shim's half of configuration: it gathers what the user wrote, field by field, and
// hands it to the bridge verbatim in SessionStart. The bridge validates and applies
// defaults at `initialize`, so a malformed value is refused there with -32602 naming
// the field, and the shim never has to understand a value.
//
// The fields and their native variables are the table of common/config_fields.h.
// Precedence per field (docs/epp1.md §6):
//   ABX_OPENSANDBOX_<FIELD>                     e.g. ABX_OPENSANDBOX_API_KEY
//   the OpenSandbox-native variable, if any     OPEN_SANDBOX_API_KEY, _DOMAIN, _PROTOCOL,
//                                               _USE_SERVER_PROXY
//   $HOME/.abx/config.toml [providers.opensandbox]
//   absent (the bridge applies the default)
// An environment variable that is set but empty counts as unset.
//
// From the file, a string is passed as written; any other TOML value is passed as its
// compact JSON text (`60`, `true`, `1.5`, `["a","b"]`, `{"k":"v"}`; dates and times as
// JSON strings). A file that does not parse yields the field `_config_file_error` with
// the parser's message (and no file values), so the bridge refuses at `initialize`
// instead of silently running with half a configuration.

#include <functional>
#include <map>
#include <string>
#include <vector>

namespace abx {

// Set, with the parser's message, when ~/.abx/config.toml exists but cannot be used.
inline constexpr char kConfigFileErrorField[] = "_config_file_error";

struct ResolvedConfig {
  // field → raw value. Holds secrets: never log it.
  std::map<std::string, std::string> values;
  // field → "env:NAME" or "file:PATH", for every field in `values`.
  std::map<std::string, std::string> sources;
};

// Returns the value of an environment variable, or null when unset.
using EnvironmentLookup = std::function<const char*(const char* name)>;

// Resolves every field from `env` and the config file under `home` (none if empty).
ResolvedConfig ResolveConfig(const EnvironmentLookup& env, const std::string& home);

// ResolveConfig with the process environment and $HOME (or the passwd entry's home).
ResolvedConfig ResolveConfigFromProcess();

// "<home>/.abx/config.toml"
std::string ConfigFilePath(const std::string& home);

}  // namespace abx
