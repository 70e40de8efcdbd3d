// The provider's configuration (bridge/core/config.h ParseConfig): fuzzed field/value
// pairs, values from JSON objects and arrays (network_policy, image_aliases,
// entrypoint) to numbers, booleans and URLs. Invariants: a refusal is -32602 naming a
// field and quoting no secret; an accepted configuration has a lifecycle URL of the
// documented shape, positive finite timeouts, a network policy that is one compact
// JSON object, an entrypoint that names a program, and an effective view (provider.info)
// that is one JSON object and shows no secret.

#include <fuzzer/FuzzedDataProvider.h>

#include <cctype>
#include <cmath>
#include <cstdint>
#include <map>
#include <string>

#include <rapidjson/document.h>

#include "bridge/core/config.h"
#include "common/config_fields.h"
#include "fuzz/check.h"
#include "fuzz/hostile_text.h"

namespace {

using abx::fuzz::Printable;

bool IsSecret(const std::string& name) {
  const abx::config::Field* field = abx::config::FindField(name);
  return field != nullptr && field->secret;
}

// `raw` with every non-empty secret replaced by a marker that cannot occur by chance
// (emptiness kept, so validity is the same): wherever a marker shows up, a secret would.
constexpr char kMarker[] = "\x02secret-marker\x02";
std::map<std::string, std::string> Marked(const std::map<std::string, std::string>& raw) {
  std::map<std::string, std::string> marked = raw;
  for (auto& [name, value] : marked) {
    if (IsSecret(name) && !value.empty()) value = kMarker;
  }
  return marked;
}

bool HasMarker(const std::string& text) { return text.find(kMarker) != std::string::npos; }

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  FuzzedDataProvider provider(data, size);
  const auto& fields = abx::config::kFields;
  std::map<std::string, std::string> raw;
  const size_t count = provider.ConsumeIntegralInRange<size_t>(0, 8);
  for (size_t i = 0; i < count; ++i) {
    const size_t pick = provider.ConsumeIntegralInRange<size_t>(0, std::size(fields));
    // One pick past the table: a field name of the fuzzer's own.
    std::string name = pick < std::size(fields) ? fields[pick].name
                                            : provider.ConsumeRandomLengthString(20);
    std::string value = provider.ConsumeRandomLengthString(1 << 16);
    if (provider.ConsumeBool()) value = abx::fuzz::ExpandRepeats(value);
    raw[name] = std::move(value);
  }

  auto parsed = abx::core::ParseConfig(raw);
  if (!parsed.ok()) {
    const abx::Error& error = parsed.error();
    // The field named is the offending one (a provider option may be called "").
    FUZZ_CHECK(error.code == abx::ErrorCode::kInvalidParams &&
                   (!error.field.empty() || raw.count("")),
               "refused without -32602 and a field: [%s]", Printable(error.message).c_str());
    // Secrets are never validated, so with markers for them the same refusal comes.
    auto marked = abx::core::ParseConfig(Marked(raw));
    FUZZ_CHECK(!marked.ok(), "refused only with its own secrets: [%s]",
               Printable(error.message).c_str());
    FUZZ_CHECK(!HasMarker(marked.error().message) && !HasMarker(marked.error().field),
               "the error [%s] quotes a secret", Printable(marked.error().message).c_str());
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
  FUZZ_CHECK(!config.entrypoint.empty() && !config.entrypoint.front().empty(),
             "an entrypoint without a program");
  const auto marked_raw = Marked(raw);
  auto marked = abx::core::ParseConfig(marked_raw);
  FUZZ_CHECK(marked.ok(), "valid only with its own secrets: [%s]",
             Printable(marked.error().message).c_str());
  const std::string shown = abx::core::EffectiveConfigJson(marked_raw, marked.value());
  FUZZ_CHECK(!HasMarker(shown), "provider.info shows a secret: [%s]", Printable(shown).c_str());
  rapidjson::Document view;
  view.Parse(shown.c_str(), shown.size());
  FUZZ_CHECK(!view.HasParseError() && view.IsObject(), "provider.info config is no JSON object [%s]",
             Printable(shown).c_str());

  return 0;
}
