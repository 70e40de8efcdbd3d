#include "bridge/core/config.h"

#include "bridge/core/egress_target.h"

#include <rapidjson/document.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdlib>
#include <optional>

#include "bridge/base/json.h"
#include "bridge/core/shell_words.h"
#include "common/config_fields.h"

namespace abx::core {
namespace {

std::string Lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return std::tolower(c); });
  return s;
}

std::string Trim(const std::string& s) {
  size_t b = s.find_first_not_of(" \t\r\n");
  if (b == std::string::npos) return "";
  size_t e = s.find_last_not_of(" \t\r\n");
  return s.substr(b, e - b + 1);
}

Result<std::string> LifecycleUrl(const std::map<std::string, std::string>& raw) {
  auto get = [&](const char* k) {
    auto it = raw.find(k);
    return it == raw.end() ? std::string() : Trim(it->second);
  };
  std::string base = get("base_url");
  if (base.empty()) {
    std::string domain = get("domain");
    std::string protocol = Lower(get("protocol"));
    if (domain.empty()) domain = config::FindField("domain")->default_text;
    if (protocol.empty()) protocol = config::FindField("protocol")->default_text;
    if (protocol != "http" && protocol != "https") {
      return InvalidParams("protocol", "protocol must be http or https");
    }
    if (domain.find("://") != std::string::npos) {
      return InvalidParams("domain", "domain is host[:port][/path], without a scheme");
    }
    base = protocol + "://" + domain;
  }
  const std::string lower = Lower(base);
  if (lower.rfind("http://", 0) != 0 && lower.rfind("https://", 0) != 0) {
    return InvalidParams("base_url", "base_url must start with http:// or https://");
  }
  if (base.find_first_of(" \t\"<>\\^`{|}") != std::string::npos) {
    return InvalidParams("base_url", "base_url holds characters a URL cannot");
  }
  // Found before trailing slashes go: "http:///" must not lose its "://".
  const size_t scheme_end = base.find("://") + 3;
  while (base.size() > scheme_end && base.back() == '/') base.pop_back();
  if (base.size() <= scheme_end || base[scheme_end] == '/') {
    return InvalidParams("base_url", "base_url has no host");
  }
  if (base.size() < 3 || base.compare(base.size() - 3, 3, "/v1") != 0) base += "/v1";
  return base;
}

// `text` as a JSON array: nullopt when it is not JSON or not an array (a command line
// may start with '[', as `[ -f x ]` does); an error when it is an array of non-strings.
Result<std::optional<std::vector<std::string>>> JsonStrings(const std::string& field,
                                                            const std::string& text) {
  rapidjson::Document doc;
  doc.Parse<json::kParseFlags>(text.c_str(), text.size());
  if (doc.HasParseError() || !doc.IsArray()) return std::optional<std::vector<std::string>>();
  std::vector<std::string> out;
  for (auto& v : doc.GetArray()) {
    if (!v.IsString()) return InvalidParams(field, field + " as a JSON array holds only strings");
    out.emplace_back(v.GetString(), v.GetStringLength());
  }
  return std::optional<std::vector<std::string>>(std::move(out));
}

Result<std::string> ParseNetworkPolicy(const std::string& text) {
  rapidjson::Document doc;
  doc.Parse<json::kParseFlags>(text.c_str(), text.size());
  if (doc.HasParseError() || !doc.IsObject()) {
    return InvalidParams("network_policy", "network_policy must be a JSON object");
  }
  // The contract's spelling (docs/epp1.md §3, sandbox.network) becomes upstream's.
  if (auto snake = doc.FindMember("default_action"); snake != doc.MemberEnd()) {
    if (doc.HasMember("defaultAction")) {
      return InvalidParams("network_policy", "network_policy names default_action and defaultAction: give one");
    }
    snake->name.SetString("defaultAction", doc.GetAllocator());
  }
  auto action = doc.FindMember("defaultAction");
  if (action != doc.MemberEnd() &&
      !(action->value.IsString() && (std::string(action->value.GetString()) == "allow" ||
                                     std::string(action->value.GetString()) == "deny"))) {
    return InvalidParams("network_policy", "network_policy.defaultAction must be allow or deny");
  }
  auto egress = doc.FindMember("egress");
  if (egress != doc.MemberEnd() && !egress->value.IsArray()) {
    return InvalidParams("network_policy", "network_policy.egress must be an array");
  }
  // Checked as a change's rules are (network/network.h): upstream's sidecar exits on an
  // action it does not know, and keeps a target it cannot match as a rule that does nothing.
  if (egress != doc.MemberEnd()) {
    for (rapidjson::SizeType i = 0; i < egress->value.Size(); ++i) {
      const std::string at = "network_policy.egress[" + std::to_string(i) + "]";
      const rapidjson::Value& rule = egress->value[i];
      auto action = rule.IsObject() ? json::GetString(rule, "action") : std::nullopt;
      auto target = rule.IsObject() ? json::GetString(rule, "target") : std::nullopt;
      if (!action || (*action != "allow" && *action != "deny")) {
        return InvalidParams("network_policy", at + ".action must be \"allow\" or \"deny\"");
      }
      if (!target) return InvalidParams("network_policy", at + ".target must be a string");
      if (auto problem = EgressTargetProblem(*target)) return InvalidParams("network_policy", at + ".target " + *problem);
    }
  }
  return json::ToJson(doc);
}

Status ParsePlatform(const std::string& text, ProviderConfig* config) {
  const std::string t = Lower(Trim(text));
  const size_t slash = t.find('/');
  if (slash == std::string::npos || slash == 0 || slash + 1 == t.size() ||
      t.find('/', slash + 1) != std::string::npos) {
    return InvalidParams("platform", "platform must be os/arch, e.g. linux/amd64");
  }
  config->platform_os = t.substr(0, slash);
  config->platform_arch = t.substr(slash + 1);
  return OkStatus();
}

}  // namespace

Result<bool> ParseBool(const std::string& field, const std::string& text) {
  const std::string t = Lower(Trim(text));
  if (t == "1" || t == "true" || t == "yes" || t == "on") return true;
  if (t == "0" || t == "false" || t == "no" || t == "off" || t.empty()) return false;
  return InvalidParams(field, field + " must be true or false");
}

Result<double> ParseSeconds(const std::string& field, const std::string& text) {
  const std::string t = Trim(text);
  char* end = nullptr;
  const double v = std::strtod(t.c_str(), &end);
  if (t.empty() || end != t.c_str() + t.size() || !std::isfinite(v) || v <= 0) {
    return InvalidParams(field, field + " must be a positive number of seconds");
  }
  return v;
}

Result<std::map<std::string, int>> ParsePool(const std::string& field, const std::string& text) {
  constexpr int kMaxCount = 16;
  const std::string t = Trim(text);
  std::map<std::string, int> out;
  auto add = [&](const std::string& name, long long count) -> Status {
    if (name.empty() || name.find_first_of(" \t=,") != std::string::npos) {
      return InvalidParams(field, field + " names templates without blanks, '=' or ','");
    }
    if (count < 0 || count > kMaxCount) {
      return InvalidParams(field, field + " counts are 0 to " + std::to_string(kMaxCount) + " (\"" + name + "\")");
    }
    if (!out.emplace(name, static_cast<int>(count)).second) {
      return InvalidParams(field, field + " names \"" + name + "\" twice");
    }
    return OkStatus();
  };
  if (t.empty()) return out;
  if (t.front() == '{') {
    rapidjson::Document doc;
    doc.Parse<json::kParseFlags>(t.c_str(), t.size());
    if (doc.HasParseError() || !doc.IsObject()) {
      return InvalidParams(field, field + " is neither template=count,… nor a JSON object");
    }
    for (auto& m : doc.GetObject()) {
      if (!m.value.IsInt64()) return InvalidParams(field, field + " maps each template to a count");
      if (Status s = add(m.name.GetString(), m.value.GetInt64()); !s.ok()) return s.error();
    }
    return out;
  }
  size_t begin = 0;
  while (begin <= t.size()) {
    size_t comma = t.find(',', begin);
    if (comma == std::string::npos) comma = t.size();
    const std::string entry = Trim(t.substr(begin, comma - begin));
    begin = comma + 1;
    const size_t eq = entry.find('=');
    const std::string count_text = eq == std::string::npos ? "" : Trim(entry.substr(eq + 1));
    char* end = nullptr;
    const long long count = std::strtoll(count_text.c_str(), &end, 10);
    if (eq == std::string::npos || count_text.empty() || *end != '\0') {
      return InvalidParams(field, field + " entry \"" + entry + "\" is not template=count");
    }
    if (Status s = add(Trim(entry.substr(0, eq)), count); !s.ok()) return s.error();
  }
  return out;
}

Result<std::map<std::string, std::string>> ParseImageAliases(const std::string& field,
                                                             const std::string& text) {
  const std::string t = Trim(text);
  std::map<std::string, std::string> out;
  if (!t.empty() && t.front() == '{') {
    rapidjson::Document doc;
    doc.Parse<json::kParseFlags>(t.c_str(), t.size());
    if (doc.HasParseError() || !doc.IsObject()) {
      return InvalidParams(field, field + " is neither name=image,… nor a JSON object");
    }
    for (auto& m : doc.GetObject()) {
      if (!m.value.IsString() || Trim(m.value.GetString()).empty()) {
        return InvalidParams(field, field + " maps each name to an image reference");
      }
      out[m.name.GetString()] = Trim(m.value.GetString());
    }
    return out;
  }
  size_t begin = 0;
  while (begin <= t.size() && !t.empty()) {
    size_t comma = t.find(',', begin);
    if (comma == std::string::npos) comma = t.size();
    const std::string entry = Trim(t.substr(begin, comma - begin));
    begin = comma + 1;
    const size_t eq = entry.find('=');
    if (eq == std::string::npos) {
      return InvalidParams(field, field + " entry \"" + entry + "\" is not name=image");
    }
    const std::string name = Trim(entry.substr(0, eq));
    const std::string image = Trim(entry.substr(eq + 1));
    const bool good_name =
        !name.empty() && std::all_of(name.begin(), name.end(), [](unsigned char c) {
          return std::isalnum(c) || c == '.' || c == '_' || c == '-';
        });
    if (!good_name) {
      return InvalidParams(field, field + " names are letters, digits, '.', '_' and '-' (entry \"" +
                                      entry + "\")");
    }
    if (image.empty() || image.find_first_of(" \t") != std::string::npos) {
      return InvalidParams(field, field + " entry \"" + entry + "\" needs an image without blanks");
    }
    if (!out.emplace(name, image).second) {
      return InvalidParams(field, field + " names " + name + " twice");
    }
  }
  return out;
}

Result<std::vector<std::string>> ParseEntrypoint(const std::string& field, const std::string& text) {
  const std::string t = Trim(text);
  std::optional<std::vector<std::string>> words;
  if (!t.empty() && t.front() == '[') {
    auto array = JsonStrings(field, t);
    if (!array.ok()) return array.error();
    words = std::move(array).value();
  }
  if (!words) words = SplitShellWords(t);
  if (!words) {
    return InvalidParams(field, field + " has an unterminated quote or a trailing backslash");
  }
  if (words->empty() || words->front().empty()) {
    return InvalidParams(field, field + " must name a program");
  }
  return std::move(words).value();
}

Result<ProviderConfig> ParseConfig(const std::map<std::string, std::string>& raw) {
  for (const auto& [name, value] : raw) {
    if (name == "_config_file_error") {
      return InvalidParams("config_file", "~/.abx/config.toml cannot be read: " + value);
    }
    if (config::FindField(name) == nullptr) {
      return InvalidParams(name, "unknown configuration field " + name);
    }
  }
  ProviderConfig config;
  auto url = LifecycleUrl(raw);
  if (!url.ok()) return url.error();
  config.lifecycle_url = *url;
  // The table's defaults first; a configured image_aliases adds to its default.
  auto default_aliases =
      ParseImageAliases("image_aliases", config::FindField("image_aliases")->default_text);
  auto default_entrypoint = ParseEntrypoint("entrypoint", config::FindField("entrypoint")->default_text);
  if (!default_aliases.ok() || !default_entrypoint.ok()) {
    return MakeError(ErrorCode::kNotInitialized, "the built-in configuration defaults do not parse");
  }
  config.image_aliases = std::move(default_aliases).value();
  config.entrypoint = std::move(default_entrypoint).value();

  for (const auto& [name, value] : raw) {
    if (name == "api_key") {
      config.api_key = Trim(value);
    } else if (name == "use_server_proxy" || name == "secure_access") {
      auto b = ParseBool(name, value);
      if (!b.ok()) return b.error();
      (name == "use_server_proxy" ? config.use_server_proxy : config.secure_access) = *b;
    } else if (name == "default_image") {
      if (Trim(value).empty()) return InvalidParams(name, "default_image must not be empty");
      config.default_image = Trim(value);
    } else if (name == "image_aliases") {
      auto aliases = ParseImageAliases(name, value);
      if (!aliases.ok()) return aliases.error();
      for (auto& [alias, image] : *aliases) config.image_aliases[alias] = image;
    } else if (name == "entrypoint") {
      if (Trim(value).empty()) continue;  // unset: the default
      auto entrypoint = ParseEntrypoint(name, value);
      if (!entrypoint.ok()) return entrypoint.error();
      config.entrypoint = std::move(entrypoint).value();
    } else if (name == "ready_timeout" || name == "request_timeout" || name == "snapshot_timeout") {
      auto s = ParseSeconds(name, value);
      if (!s.ok()) return s.error();
      (name == "ready_timeout"     ? config.ready_timeout_s
       : name == "request_timeout" ? config.request_timeout_s
                                   : config.snapshot_timeout_s) = *s;
    } else if (name == "default_timeout") {
      const std::string t = Trim(value);
      char* end = nullptr;
      const long v = std::strtol(t.c_str(), &end, 10);
      if (t.empty() || end != t.c_str() + t.size() || v < 0 || (v > 0 && v < 60) ||
          v > 100L * 365 * 86400) {
        return InvalidParams(name, "default_timeout must be 0 (no expiry) or at least 60 seconds");
      }
      config.default_timeout_s = static_cast<int>(v);
    } else if (name == "pool_ref") {
      config.pool_ref = Trim(value);
    } else if (name == "pool") {
      auto pool = ParsePool(name, value);
      if (!pool.ok()) return pool.error();
      config.pool = std::move(pool).value();
    } else if (name == "pool_ttl") {
      const std::string t = Trim(value);
      char* end = nullptr;
      const long v = std::strtol(t.c_str(), &end, 10);
      if (t.empty() || end != t.c_str() + t.size() || v < 60 || v > 86400) {
        return InvalidParams(name, "pool_ttl must be 60 to 86400 seconds");
      }
      config.pool_ttl_s = static_cast<int>(v);
    } else if (name == "watch_interval_ms") {
      const std::string t = Trim(value);
      char* end = nullptr;
      const long v = std::strtol(t.c_str(), &end, 10);
      if (t.empty() || end != t.c_str() + t.size() || v < 200 || v > 60000) {
        return InvalidParams(name, "watch_interval_ms must be 200 to 60000 milliseconds");
      }
      config.watch_interval_ms = static_cast<int>(v);
    } else if (name == "registry_username") {
      config.registry_username = value;
    } else if (name == "registry_password") {
      config.registry_password = value;
    } else if (name == "network_policy") {
      if (Trim(value).empty()) continue;
      auto policy = ParseNetworkPolicy(value);
      if (!policy.ok()) return policy.error();
      config.network_policy_json = *policy;
    } else if (name == "platform") {
      if (Trim(value).empty()) continue;
      auto st = ParsePlatform(value, &config);
      if (!st.ok()) return st.error();
    } else if (name == "execd_access_token") {
      config.execd_access_token = Trim(value);
    }
  }
  if (config.registry_password.empty() != config.registry_username.empty()) {
    return InvalidParams(config.registry_username.empty() ? "registry_username" : "registry_password",
                         "registry_username and registry_password go together");
  }
  return config;
}

std::string WithoutUserInfo(const std::string& url) {
  const size_t scheme_end = url.find("://");
  const size_t host_start = scheme_end == std::string::npos ? 0 : scheme_end + 3;
  const size_t path_start = url.find('/', host_start);
  const size_t at = url.rfind('@', path_start == std::string::npos ? url.size() : path_start);
  if (at == std::string::npos || at < host_start) return url;
  return url.substr(0, host_start) + url.substr(at + 1);
}

std::string EffectiveConfigJson(const std::map<std::string, std::string>& raw,
                                const ProviderConfig& config) {
  auto text = [&](const config::Field& f) {
    auto it = raw.find(f.name);
    return it != raw.end() ? Trim(it->second) : std::string(f.default_text);
  };
  auto string_or_null = [](const std::string& s) { return s.empty() ? "null" : json::Quote(s); };
  auto secret = [](const std::string& s) { return s.empty() ? "null" : json::Quote("***"); };
  auto number = [](double v) {
    std::string n = std::to_string(v);
    n.erase(n.find_last_not_of('0') + 1);
    if (n.back() == '.') n.pop_back();
    return n;
  };
  auto boolean = [](bool b) { return b ? "true" : "false"; };
  std::string out = "{";
  for (const config::Field& f : config::kFields) {
    const std::string name = f.name;
    std::string value;
    if (name == "base_url") {
      std::string root = WithoutUserInfo(config.lifecycle_url);
      root.resize(root.size() - 3);  // "/v1": the server root, as configured
      value = json::Quote(root);
    } else if (name == "domain" || name == "protocol" || name == "default_image") {
      value = json::Quote(name == "default_image" ? config.default_image : text(f));
    } else if (name == "api_key") {
      value = secret(config.api_key);
    } else if (name == "use_server_proxy") {
      value = boolean(config.use_server_proxy);
    } else if (name == "image_aliases") {
      value = json::ObjectOfStrings(config.image_aliases);
    } else if (name == "entrypoint") {
      value = json::ArrayOfStrings(config.entrypoint);
    } else if (name == "ready_timeout") {
      value = number(config.ready_timeout_s);
    } else if (name == "request_timeout") {
      value = number(config.request_timeout_s);
    } else if (name == "snapshot_timeout") {
      value = number(config.snapshot_timeout_s);
    } else if (name == "default_timeout") {
      value = std::to_string(config.default_timeout_s);
    } else if (name == "registry_username") {
      value = string_or_null(config.registry_username);
    } else if (name == "registry_password") {
      value = secret(config.registry_password);
    } else if (name == "network_policy") {
      value = config.network_policy_json.empty() ? "null" : config.network_policy_json;
    } else if (name == "platform") {
      value = config.platform_os.empty()
                  ? "null"
                  : json::Quote(config.platform_os + "/" + config.platform_arch);
    } else if (name == "secure_access") {
      value = boolean(config.secure_access);
    } else if (name == "execd_access_token") {
      value = secret(config.execd_access_token);
    } else if (name == "pool_ref") {
      value = string_or_null(config.pool_ref);
    } else if (name == "pool") {
      if (config.pool.empty()) {
        value = "null";
      } else {
        value = "{";
        for (const auto& [name_, count] : config.pool) {
          value += (value.size() > 1 ? "," : "") + json::Quote(name_) + ":" + std::to_string(count);
        }
        value += "}";
      }
    } else if (name == "pool_ttl") {
      value = std::to_string(config.pool_ttl_s);
    } else if (name == "watch_interval_ms") {
      value = std::to_string(config.watch_interval_ms);
    } else {
      value = f.secret ? secret(text(f)) : string_or_null(text(f));  // a field added later
    }
    if (out.size() > 1) out += ",";
    out += json::Quote(name) + ":" + value;
  }
  return out + "}";
}

}  // namespace abx::core
