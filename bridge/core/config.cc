#include "bridge/core/config.h"

#include <rapidjson/document.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdlib>

#include "bridge/base/json.h"
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
    if (domain.empty()) domain = "localhost:8080";
    if (protocol.empty()) protocol = "http";
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

Result<std::map<std::string, std::string>> ParseAliases(const std::string& text) {
  rapidjson::Document doc;
  doc.Parse<json::kParseFlags>(text.c_str(), text.size());
  if (doc.HasParseError() || !doc.IsObject()) {
    return InvalidParams("image_aliases", "image_aliases must be a JSON object of alias → image");
  }
  std::map<std::string, std::string> out;
  for (auto& m : doc.GetObject()) {
    if (!m.value.IsString() || m.value.GetStringLength() == 0) {
      return InvalidParams("image_aliases", "image_aliases values must be image references");
    }
    out[m.name.GetString()] = m.value.GetString();
  }
  return out;
}

Result<std::vector<std::string>> ParseEntrypoint(const std::string& text) {
  rapidjson::Document doc;
  doc.Parse<json::kParseFlags>(text.c_str(), text.size());
  if (doc.HasParseError() || !doc.IsArray() || doc.Empty()) {
    return InvalidParams("entrypoint", "entrypoint must be a non-empty JSON array of strings");
  }
  std::vector<std::string> out;
  for (auto& v : doc.GetArray()) {
    if (!v.IsString()) {
      return InvalidParams("entrypoint", "entrypoint must be a non-empty JSON array of strings");
    }
    out.emplace_back(v.GetString(), v.GetStringLength());
  }
  return out;
}

Result<std::string> ParseNetworkPolicy(const std::string& text) {
  rapidjson::Document doc;
  doc.Parse<json::kParseFlags>(text.c_str(), text.size());
  if (doc.HasParseError() || !doc.IsObject()) {
    return InvalidParams("network_policy", "network_policy must be a JSON object");
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
      auto aliases = ParseAliases(value);
      if (!aliases.ok()) return aliases.error();
      config.image_aliases = std::move(aliases).value();
    } else if (name == "entrypoint") {
      auto entrypoint = ParseEntrypoint(value);
      if (!entrypoint.ok()) return entrypoint.error();
      config.entrypoint = std::move(entrypoint).value();
    } else if (name == "ready_timeout" || name == "request_timeout") {
      auto s = ParseSeconds(name, value);
      if (!s.ok()) return s.error();
      (name == "ready_timeout" ? config.ready_timeout_s : config.request_timeout_s) = *s;
    } else if (name == "default_timeout") {
      const std::string t = Trim(value);
      char* end = nullptr;
      const long v = std::strtol(t.c_str(), &end, 10);
      if (t.empty() || end != t.c_str() + t.size() || v < 0 || (v > 0 && v < 60) ||
          v > 100L * 365 * 86400) {
        return InvalidParams(name, "default_timeout must be 0 (no expiry) or at least 60 seconds");
      }
      config.default_timeout_s = static_cast<int>(v);
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

std::map<std::string, std::string> RedactedView(const std::map<std::string, std::string>& raw,
                                                const ProviderConfig& config) {
  std::map<std::string, std::string> out;
  for (const config::Field& f : config::kFields) {
    auto it = raw.find(f.name);
    std::string value = it != raw.end() ? it->second : f.default_text;
    if (f.secret && !value.empty()) value = "***";
    out[f.name] = value;
  }
  out["lifecycle_url"] = config.lifecycle_url;
  return out;
}

}  // namespace abx::core
