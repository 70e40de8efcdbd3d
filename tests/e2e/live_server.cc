#include "tests/e2e/live_server.h"

#include <cstdlib>
#include <initializer_list>

namespace abx::e2e {
namespace {

std::string Env(const char* name) {
  const char* value = std::getenv(name);
  return value ? value : "";
}

// The first of `names` that is set and not empty, else "".
std::string FirstEnv(std::initializer_list<const char*> names) {
  for (const char* name : names) {
    if (std::string value = Env(name); !value.empty()) return value;
  }
  return "";
}

std::string WithoutV1(std::string url) {
  while (!url.empty() && url.back() == '/') url.pop_back();
  if (url.size() >= 3 && url.compare(url.size() - 3, 3, "/v1") == 0) url.resize(url.size() - 3);
  while (!url.empty() && url.back() == '/') url.pop_back();
  return url;
}

}  // namespace

bool LiveMode() { return Env("OPENSANDBOX_LIVE") == "1"; }

std::optional<LiveServer> LiveServerFromEnv(std::string* error) {
  LiveServer server;
  const std::string base_url = Env("ABX_OPENSANDBOX_BASE_URL");
  const std::string domain = FirstEnv({"ABX_OPENSANDBOX_DOMAIN", "OPEN_SANDBOX_DOMAIN"});
  if (!base_url.empty()) {
    server.root_url = WithoutV1(base_url);
  } else if (!domain.empty()) {
    std::string protocol = FirstEnv({"ABX_OPENSANDBOX_PROTOCOL", "OPEN_SANDBOX_PROTOCOL"});
    server.root_url = WithoutV1((protocol.empty() ? "http" : protocol) + "://" + domain);
  } else {
    *error =
        "OPENSANDBOX_LIVE=1 but no server is named: set ABX_OPENSANDBOX_BASE_URL (or "
        "OPEN_SANDBOX_DOMAIN) and OPEN_SANDBOX_API_KEY";
    return std::nullopt;
  }
  server.api_key = FirstEnv({"ABX_OPENSANDBOX_API_KEY", "OPEN_SANDBOX_API_KEY"});
  if (!server.api_key.empty()) server.shim_env["ABX_OPENSANDBOX_API_KEY"] = server.api_key;
  for (const char* name :
       {"ABX_OPENSANDBOX_BASE_URL", "ABX_OPENSANDBOX_EXECD_ACCESS_TOKEN",
        "ABX_OPENSANDBOX_USE_SERVER_PROXY", "ABX_OPENSANDBOX_DOMAIN", "ABX_OPENSANDBOX_PROTOCOL",
        "OPEN_SANDBOX_USE_SERVER_PROXY", "OPEN_SANDBOX_DOMAIN", "OPEN_SANDBOX_PROTOCOL"}) {
    if (std::string value = Env(name); !value.empty()) server.shim_env[name] = value;
  }
  if (std::string image = Env("ABX_LIVE_TEMPLATE"); !image.empty()) {
    server.shim_env["ABX_OPENSANDBOX_DEFAULT_IMAGE"] = image;
  }
  return server;
}

}  // namespace abx::e2e
