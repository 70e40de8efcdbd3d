#pragma once
// The provider's configuration as the bridge uses it: typed, validated, with defaults.
// The shim resolves precedence (environment, ~/.abx/config.toml) and sends raw strings;
// the fields, their defaults and secrecy are the table of common/config_fields.h, and
// this file is the one place that knows each field's type.

#include <map>
#include <string>
#include <vector>

#include "bridge/base/error.h"

namespace abx::core {

struct ProviderConfig {
  // Lifecycle API root, always ending in "/v1" (e.g. "http://127.0.0.1:8080/v1").
  std::string lifecycle_url;
  std::string api_key;  // secret
  bool use_server_proxy = false;
  std::string default_image = "python:3.12-slim";
  std::map<std::string, std::string> image_aliases;
  std::vector<std::string> entrypoint;  // empty: derive from the image
  double ready_timeout_s = 60;
  double request_timeout_s = 30;
  int default_timeout_s = 600;  // sandbox lifetime when create names none; 0 = no expiry
  std::string registry_username;
  std::string registry_password;  // secret
  std::string network_policy_json;  // compact JSON object, empty when unset
  std::string platform_os, platform_arch;
  bool secure_access = false;
  std::string execd_access_token;  // secret

  // Identifies the server and the credential: state obtained with one key is never
  // served to a session holding another. In memory only; holds the key itself.
  std::string CredentialScope() const { return lifecycle_url + '\n' + api_key; }
};

// Validates raw values (field → text) and applies defaults. A malformed value is
// -32602 naming the field. `overrides` are provider_options of one request, applied on
// top of `raw` with the same rules.
Result<ProviderConfig> ParseConfig(const std::map<std::string, std::string>& raw);

// The effective configuration for provider.info: every field, secrets as "***".
std::map<std::string, std::string> RedactedView(const std::map<std::string, std::string>& raw,
                                                const ProviderConfig& config);

// Parsers shared with provider_options.
Result<bool> ParseBool(const std::string& field, const std::string& text);
Result<double> ParseSeconds(const std::string& field, const std::string& text);

}  // namespace abx::core
