#include "bridge/core/sandboxes/ports.h"

#include "bridge/base/log.h"
#include "bridge/base/time_util.h"
#include "bridge/opensandbox/egress_client.h"
#include "bridge/opensandbox/lifecycle_client.h"

namespace abx::core {
namespace {

constexpr int kExecdPort = 44772;

}  // namespace

Result<PortUrl> Ports::Url(const std::string& sandbox_id, int port, std::optional<int64_t> expires_s,
                           CancelToken* cancel) {
  if (port == opensandbox::kEgressPort) {
    // Its endpoint's headers are the sidecar's token, a secret (docs/mapping.md, ports.url).
    return InvalidParams("port", "port 18080 is the sandbox's egress sidecar, whose headers are its token: its "
                                 "rules are read and changed with network.policy.get, .patch and .delete");
  }
  if (expires_s) return SignedUrl(sandbox_id, port, *expires_s, cancel);
  opensandbox::LifecycleClient lifecycle = upstream_->Lifecycle(*config_);
  ABX_ASSIGN_OR_RETURN(opensandbox::Endpoint endpoint,
                       lifecycle.GetEndpoint(sandbox_id, port, config_->use_server_proxy, cancel));
  if (const std::string* access = opensandbox::SecureAccessToken(endpoint.headers)) log::RegisterSecret(*access);
  PortUrl out;
  out.url = ExecdBaseUrl(config_->lifecycle_url, endpoint.endpoint);
  out.headers.insert(endpoint.headers.begin(), endpoint.headers.end());
  return out;
}

Result<PortUrl> Ports::SignedUrl(const std::string& sandbox_id, int port, int64_t expires_s, CancelToken* cancel) {
  if (expires_s < kMinSignedUrlSeconds || expires_s > kMaxSignedUrlSeconds) {
    return InvalidParams("expires", "expires must be between " + std::to_string(kMinSignedUrlSeconds) + " and " +
                                        std::to_string(kMaxSignedUrlSeconds) + " seconds");
  }
  if (port == kExecdPort) {
    return InvalidParams("port", "a signed URL of port 44772, execd's, would let anyone who holds it run commands "
                                 "in the sandbox: signed URLs are for the sandbox's own services");
  }
  if (config_->use_server_proxy) {
    return InvalidParams("expires", "signed URLs are the ingress gateway's routes, and use_server_proxy sends "
                                    "through the server's proxy instead: the server cannot combine them");
  }
  opensandbox::LifecycleClient lifecycle = upstream_->Lifecycle(*config_);
  // The plain endpoint first: the server's clock (the expiry is its "now" + expires) and
  // whether the sandbox is secure.
  int64_t server_now_ms = 0;
  ABX_ASSIGN_OR_RETURN(opensandbox::Endpoint plain,
                       lifecycle.GetEndpoint(sandbox_id, port, false, cancel, &server_now_ms));
  if (const std::string* access = opensandbox::SecureAccessToken(plain.headers)) log::RegisterSecret(*access);
  const int64_t expires_at_s = server_now_ms / 1000 + expires_s;
  ABX_ASSIGN_OR_RETURN(opensandbox::Endpoint signed_route,
                       lifecycle.GetSignedEndpoint(sandbox_id, port, expires_at_s, cancel));
  if (signed_route.endpoint == plain.endpoint && signed_route.headers == plain.headers) {
    // A server before 0.1.13 has no signed routes and ignores the query.
    return MakeError(ErrorCode::kInvalidState,
                     "the server cannot sign URLs: it answered the plain endpoint (signed URLs need OpenSandbox "
                     "server 0.1.13 or later, on Kubernetes in ingress gateway mode with secure_access signing keys)");
  }
  if (!signed_route.headers.empty()) {
    // Header route mode: the signed route travels in OpenSandbox-Ingress-To.
    return MakeError(ErrorCode::kInvalidState,
                     "the server's ingress gateway routes by header (route mode header): even a signed route "
                     "needs a header there, so it cannot be a bare URL; ports.url without expires gives the URL "
                     "and its headers");
  }
  if (!opensandbox::SecureAccessToken(plain.headers)) {
    // The gateway checks signatures only for secure sandboxes: this one's would never
    // expire (wildcard mode) or lead nowhere (uri mode).
    return MakeError(ErrorCode::kInvalidState,
                     "sandbox " + sandbox_id + " was not created with secure_access, so the gateway checks no "
                     "signature on its routes and a signed URL would not expire; its port is open without one "
                     "(ports.url without expires)");
  }
  PortUrl out;
  out.url = ExecdBaseUrl(config_->lifecycle_url, signed_route.endpoint);
  out.expires_at = FormatRfc3339Millis(expires_at_s * 1000);
  return out;
}

}  // namespace abx::core
