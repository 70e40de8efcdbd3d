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
  // Short template names: the field's default, overridden per name by the configured
  // value (and, for one create, by its provider_options).
  std::map<std::string, std::string> image_aliases;
  // The entrypoint of stock images when the create call names none; a code-interpreter
  // image keeps its own script (bridge/core/sandboxes/sandboxes.h).
  std::vector<std::string> entrypoint;
  double ready_timeout_s = 60;
  double request_timeout_s = 30;
  int default_timeout_s = 600;  // sandbox lifetime when create names none; 0 = no expiry
  std::string registry_username;
  std::string registry_password;  // secret
  std::string network_policy_json;  // compact JSON object, empty when unset
  std::string platform_os, platform_arch;
  bool secure_access = false;
  std::string execd_access_token;  // secret
  double snapshot_timeout_s = 600;  // how long sandbox.snapshot waits for Ready
  // The server's own pool (extensions.poolRef, Kubernetes) a create of the default
  // template comes from; empty: none.
  std::string pool_ref;
  // The daemon's warm pool (warm_pool.h): sandboxes kept Running per template name, and
  // the server timeout each has while it waits (renewed while the daemon runs).
  std::map<std::string, int> pool;
  int pool_ttl_s = 1800;
  // How often files.watch compares listings in a sandbox without inotifywait (watch_hub.h).
  int watch_interval_ms = 1000;

  // Identifies the server and the credential: state obtained with one key is never
  // served to a session holding another. In memory only; holds the key itself.
  std::string CredentialScope() const { return lifecycle_url + '\n' + api_key; }
};

// Validates raw values (field → text) and applies the defaults of
// common/config_fields.h. A malformed value is -32602 naming the field.
Result<ProviderConfig> ParseConfig(const std::map<std::string, std::string>& raw);

// The effective configuration for provider.info, as a JSON object: one key per field of
// common/config_fields.h with the value in use, typed (base_url the server root in use,
// image_aliases the merged object, entrypoint an array, numbers and booleans as such,
// unset fields null), secrets as "***".
std::string EffectiveConfigJson(const std::map<std::string, std::string>& raw,
                                const ProviderConfig& config);

// "https://user:pass@host/v1" → "https://host/v1": a URL may carry a password.
std::string WithoutUserInfo(const std::string& url);

// Parsers shared with provider_options.
Result<bool> ParseBool(const std::string& field, const std::string& text);
Result<double> ParseSeconds(const std::string& field, const std::string& text);
// `name=image,name=image` (blanks around entries ignored), or a JSON object of strings.
Result<std::map<std::string, std::string>> ParseImageAliases(const std::string& field,
                                                             const std::string& text);
// A command line split by POSIX quoting (bridge/core/shell_words.h), or a JSON array of
// strings. Never empty.
// `pool`: "template=count,…" (count 0–16; blanks around entries ignored) or a JSON object
// of counts. A repeated template, a count out of range or a malformed entry is -32602.
Result<std::map<std::string, int>> ParsePool(const std::string& field, const std::string& text);

Result<std::vector<std::string>> ParseEntrypoint(const std::string& field, const std::string& text);

}  // namespace abx::core
