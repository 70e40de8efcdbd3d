// The provider's configuration (bridge/core/config.h ParseConfig): fuzzed field/value
// pairs, values from JSON objects and arrays (network_policy, image_aliases,
// entrypoint) to numbers, booleans and URLs. Invariants: a refusal is -32602 naming a
// field and quoting no secret; an accepted configuration has a lifecycle URL of the
// documented shape, positive finite timeouts, a network policy that is one compact
// JSON object, and a redacted view that shows no secret.

#include <fuzzer/FuzzedDataProvider.h>

#include <cctype>
#include <cmath>
#include <cstdint>
#include <map>
#include <string>

#include <rapidjson/document.h>

#include "bridge/core/config.h"
#include "fuzz/check.h"
#include "fuzz/hostile_text.h"

namespace {

using abx::fuzz::Printable;

bool IsSecret(const std::string& name) {
  for (const auto& field : abx::core::ConfigFields()) {
    if (name == field.name) return field.secret;
  }
  return false;
}

// True when `secret` (long enough to be told apart) appears in `text` and is not just
// a piece of some non-secret value that may rightly be quoted there.
bool Leaks(const std::string& text, const std::string& secret,
           const std::map<std::string, std::string>& raw) {
  if (secret.size() < 6 || text.find(secret) == std::string::npos) return false;
  for (const auto& [name, value] : raw) {
    if (!IsSecret(name) && (value.find(secret) != std::string::npos ||
                            name.find(secret) != std::string::npos)) {
      return false;
    }
  }
  return true;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  FuzzedDataProvider provider(data, size);
  const auto& fields = abx::core::ConfigFields();
  std::map<std::string, std::string> raw;
  const size_t count = provider.ConsumeIntegralInRange<size_t>(0, 8);
  for (size_t i = 0; i < count; ++i) {
    const size_t pick = provider.ConsumeIntegralInRange<size_t>(0, fields.size());
    // One pick past the table: a field name of the fuzzer's own.
    std::string name = pick < fields.size() ? fields[pick].name
                                            : provider.ConsumeRandomLengthString(20);
    std::string value = provider.ConsumeRandomLengthString(1 << 16);
    if (provider.ConsumeBool()) value = abx::fuzz::ExpandRepeats(value);
    raw[name] = std::move(value);
  }

  auto parsed = abx::core::ParseConfig(raw);
  if (!parsed.ok()) {
    const abx::core::Error& error = parsed.error();
    // The field named is the offending one (a provider option may be called "").
    FUZZ_CHECK(error.code == abx::core::ErrorCode::kInvalidParams &&
                   (!error.field.empty() || raw.count("")),
               "refused without -32602 and a field: [%s]", Printable(error.message).c_str());
    for (const auto& [name, value] : raw) {
      if (name == "_config_file_error") continue;  // quoted on purpose
      FUZZ_CHECK(!IsSecret(name) || !Leaks(error.message, value, raw),
                 "the error [%s] quotes the %s", Printable(error.message).c_str(), name.c_str());
    }
    return 0;
  }
  const abx::core::ProviderConfig& config = parsed.value();
  // scheme://host[:port][/path]/v1, the host not empty.
  const std::string& url = config.lifecycle_url;
  std::string lower = url;
  for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  const size_t host = lower.rfind("http://", 0) == 0    ? 7
                      : lower.rfind("https://", 0) == 0 ? 8
                                                        : std::string::npos;
  FUZZ_CHECK(host != std::string::npos && url.size() > host && url[host] != '/' &&
                 url.size() >= host + 4 && url.compare(url.size() - 3, 3, "/v1") == 0,
             "lifecycle_url [%s]", Printable(url).c_str());
  FUZZ_CHECK(std::isfinite(config.ready_timeout_s) && config.ready_timeout_s > 0 &&
                 std::isfinite(config.request_timeout_s) && config.request_timeout_s > 0,
             "timeouts %g / %g", config.ready_timeout_s, config.request_timeout_s);
  FUZZ_CHECK(config.default_timeout_s >= 0, "default_timeout %d", config.default_timeout_s);
  FUZZ_CHECK(!config.default_image.empty(), "empty default image");
  if (!config.network_policy_json.empty()) {
    rapidjson::Document policy;
    policy.Parse<rapidjson::kParseIterativeFlag>(config.network_policy_json.data(),
                                                 config.network_policy_json.size());
    FUZZ_CHECK(!policy.HasParseError() && policy.IsObject(), "network policy [%s]",
               Printable(config.network_policy_json).c_str());
  }
  for (const auto& [alias, image] : config.image_aliases) {
    FUZZ_CHECK(!image.empty(), "alias [%s] maps to no image", Printable(alias).c_str());
  }
  const auto view = abx::core::RedactedView(raw, config);
  for (const auto& [name, value] : raw) {
    if (!IsSecret(name)) continue;
    for (const auto& [shown_name, shown] : view) {
      FUZZ_CHECK(IsSecret(shown_name) ? (shown.empty() || shown == "***")
                                      : !Leaks(shown, value, raw),
                 "provider.info shows the %s in %s", name.c_str(), shown_name.c_str());
    }
  }
  return 0;
}
