#pragma once

// The live tier: with OPENSANDBOX_LIVE=1 the end-to-end suite runs against the real
// OpenSandbox server the environment names (Docker or Kubernetes runtime) instead of a
// fake of its own. Tests that need one of the fake's controls (/_fake/* switches, stats,
// restarts with flags, execd version, clock skew, the fake's processes and files) skip
// themselves there with REQUIRE_FAKE (harness.h).

#include <map>
#include <optional>
#include <string>

namespace abx::e2e {

// OPENSANDBOX_LIVE=1.
bool LiveMode();

struct LiveServer {
  // The server's address without a trailing "/" or "/v1": ABX_OPENSANDBOX_BASE_URL, else
  // <protocol>://<domain> from ABX_OPENSANDBOX_DOMAIN / OPEN_SANDBOX_DOMAIN (and _PROTOCOL).
  std::string root_url;
  // ABX_OPENSANDBOX_API_KEY, else OPEN_SANDBOX_API_KEY; may be empty (a server without auth).
  std::string api_key;
  // What a shim needs to reach the server, from this process's environment, handed to the
  // shim through its environment (never argv): ABX_OPENSANDBOX_BASE_URL, _API_KEY,
  // _EXECD_ACCESS_TOKEN, _USE_SERVER_PROXY, _DOMAIN, _PROTOCOL and the OPEN_SANDBOX_*
  // names of the last three, each when set; ABX_OPENSANDBOX_DEFAULT_IMAGE from
  // ABX_LIVE_TEMPLATE when set (the image the template `base` makes).
  std::map<std::string, std::string> shim_env;
};

// The server the environment names; nullopt with `*error` when it names none.
std::optional<LiveServer> LiveServerFromEnv(std::string* error);

}  // namespace abx::e2e
