#pragma once
// The provider's configuration fields: the one table the shim and the bridge read.
//
// The shim resolves each field by name from the environment (ABX_OPENSANDBOX_<FIELD>,
// then the OpenSandbox-native variable) and ~/.abx/config.toml
// (epp-shim/config_resolver.h); the bridge parses the values it is sent
// (bridge/core/config.h), registers the secrets with its log, shows them as "***"
// (provider.info) and lets a sandbox.create's provider_options set only the per-request
// fields. abx-provider.toml declares the same table for abx, and
// tests/bridge/api/epp/manifest_test.cc holds the two together.
//
// Adding a field: a row here, its parsing in bridge/core/config.cc, its [config.*] entry
// in abx-provider.toml and its row in the README's table.

#include <cstddef>
#include <string>
#include <string_view>

namespace abx::config {

struct Field {
  const char* name;
  const char* default_text;     // as documented; "" when there is none
  const char* native_variable;  // the OpenSandbox SDK's own variable, or nullptr
  bool secret;                  // never logged, never shown, never in argv
  bool per_request;             // a sandbox.create's provider_options may set it
};

// clang-format off
inline constexpr Field kFields[] = {
    // name                 default                        native variable                   secret per_request
    {"base_url",            "",                            nullptr,                          false, false},
    {"domain",              "127.0.0.1:8080",              "OPEN_SANDBOX_DOMAIN",            false, false},
    {"protocol",            "http",                        "OPEN_SANDBOX_PROTOCOL",          false, false},
    {"api_key",             "",                            "OPEN_SANDBOX_API_KEY",           true,  false},
    {"use_server_proxy",    "false",                       "OPEN_SANDBOX_USE_SERVER_PROXY",  false, false},
    {"default_image",       "python:3.12-slim",            nullptr,                          false, true},
    {"image_aliases",       "code=opensandbox/code-interpreter:v1.1.0", nullptr,             false, true},
    {"entrypoint",          "tail -f /dev/null",           nullptr,                          false, true},
    {"ready_timeout",       "60",                          nullptr,                          false, true},
    {"request_timeout",     "30",                          nullptr,                          false, false},
    {"default_timeout",     "600",                         nullptr,                          false, false},
    {"registry_username",   "",                            nullptr,                          false, true},
    {"registry_password",   "",                            nullptr,                          true,  true},
    {"network_policy",      "",                            nullptr,                          false, true},
    {"platform",            "",                            nullptr,                          false, true},
    {"secure_access",       "false",                       nullptr,                          false, true},
    {"execd_access_token",  "",                            nullptr,                          true,  false},
    {"snapshot_timeout",    "600",                         nullptr,                          false, false},
    {"pool_ref",            "",                            nullptr,                          false, true},
    {"pool",                "",                            nullptr,                          false, false},
    {"pool_ttl",            "1800",                        nullptr,                          false, false},
    {"watch_interval_ms",   "1000",                        nullptr,                          false, false},
};
// clang-format on

// The field named `name`, or null when there is none.
const Field* FindField(std::string_view name);

// The field's own environment variable: "ABX_OPENSANDBOX_" and its name in capitals.
std::string OwnVariable(const Field& field);

}  // namespace abx::config
