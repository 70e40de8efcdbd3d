#pragma once
// The OpenSandbox lifecycle REST API (docs/opensandbox.md §1) for one server and credential.

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "bridge/base/cancel.h"
#include "bridge/base/error.h"
#include "bridge/opensandbox/http_caller.h"

namespace abx::opensandbox {

struct SandboxRecord {
  std::string id;
  std::string image;
  std::string snapshot_id;  // a restored sandbox's source (it has no image)
  std::string state;  // the server's, unknown values kept as they are
  std::string reason;
  std::string message;
  std::string created_at;  // RFC 3339 UTC, as normalised
  std::string expires_at;  // empty: no expiry
  std::map<std::string, std::string> metadata;
  std::vector<std::string> entrypoint;
};

struct SandboxPage {
  std::vector<SandboxRecord> items;
  bool has_next = false;
  int64_t total_items = 0;
};

// A snapshot as the server shows it (docs/opensandbox.md §1.12).
struct SnapshotRecord {
  std::string id;
  std::string sandbox_id;
  std::string name;   // empty: none given
  std::string state;  // Creating, Ready, Failed, Deleting; unknown values kept
  std::string reason;
  std::string message;
  std::string created_at;  // RFC 3339 UTC, as normalised
};

struct SnapshotPage {
  std::vector<SnapshotRecord> items;
  bool has_next = false;
};

struct Endpoint {
  std::string endpoint;  // host[:port][/path], no scheme
  Headers headers;       // to send on every request there
};

// A secure sandbox's access header (a sandbox created with secure_access, behind the
// ingress gateway): its value is a credential for every port of the sandbox.
inline constexpr char kSecureAccessHeader[] = "OpenSandbox-Secure-Access";
// The value of that header among an endpoint's headers, or null.
const std::string* SecureAccessToken(const Headers& headers);

class LifecycleClient {
 public:
  LifecycleClient(HttpCaller* http, std::string base_url, std::string api_key)
      : http_(http), base_url_(std::move(base_url)), api_key_(std::move(api_key)) {}

  void set_timeout_ms(int64_t ms) { timeout_ms_ = ms; }
  const std::string& base_url() const { return base_url_; }

  // POST /sandboxes with a ready CreateSandboxRequest body.
  Result<SandboxRecord> Create(const std::string& body_json, const CancelToken* cancel);
  // GET /sandboxes/{id}; `server_now_ms` receives the server's clock (Date header).
  Result<SandboxRecord> Get(const std::string& id, const CancelToken* cancel,
                            int64_t* server_now_ms = nullptr);
  Result<SandboxPage> List(const std::vector<std::string>& states,
                           const std::map<std::string, std::string>& metadata, int page,
                           int page_size, const CancelToken* cancel);
  Status Delete(const std::string& id, const CancelToken* cancel);
  Status Pause(const std::string& id, const CancelToken* cancel);
  Status Resume(const std::string& id, const CancelToken* cancel);
  // Absolute expiry; returns the server's normalised expiresAt.
  Result<std::string> Renew(const std::string& id, const std::string& expires_at,
                            const CancelToken* cancel);
  // PATCH /sandboxes/{id}/metadata with a ready merge-patch object; the whole sandbox.
  Result<SandboxRecord> PatchMetadata(const std::string& id, const std::string& patch_json,
                                      const CancelToken* cancel);
  // POST /sandboxes/{id}/snapshots (`name` empty: none); the snapshot, Creating.
  Result<SnapshotRecord> CreateSnapshot(const std::string& sandbox_id, const std::string& name,
                                        const CancelToken* cancel);
  Result<SnapshotRecord> GetSnapshot(const std::string& id, const CancelToken* cancel);
  // `sandbox_id` empty: every sandbox's.
  Result<SnapshotPage> ListSnapshots(const std::string& sandbox_id, const std::vector<std::string>& states,
                                     int page, int page_size, const CancelToken* cancel);
  Status DeleteSnapshot(const std::string& id, const CancelToken* cancel);
  // `server_now_ms` receives the server's clock (Date header).
  Result<Endpoint> GetEndpoint(const std::string& id, int port, bool use_server_proxy,
                               const CancelToken* cancel, int64_t* server_now_ms = nullptr);
  // The signed route of a port until `expires_unix_s` (?expires=; signed_endpoint.cc):
  // only a Kubernetes server behind its ingress gateway with secure_access keys signs.
  // Its refusals are E8007 saying what the server would need (the Kubernetes runtime,
  // gateway mode, signing keys), and -32602 naming `expires` for an expiry it refuses.
  Result<Endpoint> GetSignedEndpoint(const std::string& id, int port, int64_t expires_unix_s,
                                     const CancelToken* cancel);
  // GET /health at the server root (no auth needed) — reachability; also the clock.
  Result<int64_t> ServerNowMillis(const CancelToken* cancel);
  // Any authenticated call that proves the key is accepted.
  Status CheckAuth(const CancelToken* cancel);

 private:
  HttpCall Call(std::string method, std::string path) const;
  HttpCaller* http_;
  std::string base_url_;
  std::string api_key_;
  int64_t timeout_ms_ = 30000;
};

// Decoders of the server's JSON, exposed for tests and fuzzers.
Result<SandboxRecord> DecodeSandbox(const std::string& body);
Result<SandboxPage> DecodeSandboxPage(const std::string& body);
Result<Endpoint> DecodeEndpoint(const std::string& body);
Result<SnapshotRecord> DecodeSnapshot(const std::string& body);
Result<SnapshotPage> DecodeSnapshotPage(const std::string& body);

}  // namespace abx::opensandbox
