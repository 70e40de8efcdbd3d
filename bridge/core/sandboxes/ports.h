#pragma once
// ports.url: where a port of a sandbox is reached from outside (its direct endpoint, or
// the server's proxy path when use_server_proxy is set) and the headers to send there.

#include <map>
#include <string>

#include "bridge/base/cancel.h"
#include "bridge/base/error.h"
#include "bridge/core/config.h"
#include "bridge/core/endpoint_cache.h"

namespace abx::core {

struct PortUrl {
  std::string url;                             // scheme of the lifecycle URL + the endpoint
  std::map<std::string, std::string> headers;  // to send on every request to `url`
};

class Ports {
 public:
  Ports(EndpointCache* upstream, const ProviderConfig* config) : upstream_(upstream), config_(config) {}

  // `port` is 1…65535 (checked by the caller, which names its own parameter); 18080, the
  // egress sidecar's, is -32602 naming `port`.
  Result<PortUrl> Url(const std::string& sandbox_id, int port, CancelToken* cancel);

 private:
  EndpointCache* upstream_;
  const ProviderConfig* config_;
};

}  // namespace abx::core
