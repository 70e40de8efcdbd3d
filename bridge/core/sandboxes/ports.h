#pragma once
// ports.url: where a port of a sandbox is reached from outside (its direct endpoint, or
// the server's proxy path when use_server_proxy is set) and the headers to send there;
// or, with an expiry, a signed URL that needs no header and stops working then
// (docs/mapping.md, "Signed URLs").

#include <cstdint>
#include <map>
#include <optional>
#include <string>

#include "bridge/base/cancel.h"
#include "bridge/base/error.h"
#include "bridge/core/config.h"
#include "bridge/core/endpoint_cache.h"

namespace abx::core {

// The bounds of a signed URL's life, in seconds from now.
inline constexpr int64_t kMinSignedUrlSeconds = 60;
inline constexpr int64_t kMaxSignedUrlSeconds = 7 * 24 * 3600;

struct PortUrl {
  std::string url;                             // scheme of the lifecycle URL + the endpoint
  std::map<std::string, std::string> headers;  // to send on every request to `url`
  std::string expires_at;  // a signed URL's end (RFC 3339, the server's clock); else empty
};

class Ports {
 public:
  Ports(EndpointCache* upstream, const ProviderConfig* config) : upstream_(upstream), config_(config) {}

  // `port` is 1…65535 (checked by the caller, which names its own parameter); 18080, the
  // egress sidecar's, is -32602 naming `port`. With `expires_s` (seconds from now,
  // kMinSignedUrlSeconds…kMaxSignedUrlSeconds, else -32602 naming `expires`): the signed
  // URL, refused for execd's port, with use_server_proxy, and where the server or the
  // sandbox cannot give one that works bare and expires (E8007 saying why).
  Result<PortUrl> Url(const std::string& sandbox_id, int port, std::optional<int64_t> expires_s,
                      CancelToken* cancel);

 private:
  Result<PortUrl> SignedUrl(const std::string& sandbox_id, int port, int64_t expires_s, CancelToken* cancel);

  EndpointCache* upstream_;
  const ProviderConfig* config_;
};

}  // namespace abx::core
