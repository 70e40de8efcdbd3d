#pragma once
// Sandbox lifecycle as the provider offers it, over the lifecycle API and execd's ping:
// template resolution, create-and-wait-until-usable (never leaking a half-made sandbox),
// connect, list across the server's pages, idempotent kill, timeouts on the server's
// clock, pause and resume.

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "bridge/base/cancel.h"
#include "bridge/base/error.h"
#include "bridge/core/config.h"
#include "bridge/core/endpoint_cache.h"
#include "bridge/core/interpreter_paths.h"
#include "bridge/core/sandboxes/volumes.h"
#include "bridge/opensandbox/lifecycle_client.h"

namespace abx::core {

// True when the image's repository name ends in "code-interpreter", whatever its
// registry, tag or digest.
bool IsCodeInterpreterImage(const std::string& image);

// Template resolution by name: an alias of image_aliases → its image, "base" (or "") →
// default_image, else the name itself (an image reference, or a template of ours).
std::string ResolveImage(const ProviderConfig& config, const std::string& template_name);

struct CreateSpec {
  std::string template_name;           // alias, "base", or an image reference; "" = base
  std::optional<int64_t> timeout_s;    // sandbox lifetime; 0 = no expiry
  std::map<std::string, std::string> env;
  std::map<std::string, std::string> metadata;
  std::string cpu, memory;
  // The create call's own (or its provider_options'); empty: a code-interpreter image's
  // script, else the configured entrypoint.
  std::vector<std::string> entrypoint;
  std::optional<bool> secure;
  // A restore (provider_options.snapshot_id): the sandbox starts from this snapshot, with
  // the entrypoint its source ran unless `entrypoint` names one (saved_entrypoint.h).
  std::string snapshot_id;
  // Mounted at create (volumes.h); checked by CheckVolumes before the request is sent.
  std::vector<Volume> volumes;
  // The server's own pool to take the sandbox from (extensions.poolRef), named by the
  // call; else the configured pool_ref applies to a create of the default template.
  std::string pool_ref;
};

struct Sandbox {
  opensandbox::SandboxRecord record;
  std::string template_name;
};

struct SandboxList {
  std::vector<Sandbox> sandboxes;
  std::optional<std::string> next_cursor;
};

// Progress of a wait, e.g. ("Pending", "waiting for execd").
using ProgressFn = std::function<void(const std::string& state, const std::string& message)>;

class Sandboxes {
 public:
  Sandboxes(EndpointCache* upstream, const ProviderConfig* config)
      : upstream_(upstream), config_(config), lifecycle_(upstream->Lifecycle(*config)) {}

  // Sandbox once Running and execd answers. On any failure, cancel or ready_timeout the
  // sandbox is killed before the error returns.
  Result<Sandbox> Create(const CreateSpec& spec, CancelToken* cancel, const ProgressFn& progress);
  Result<Sandbox> Connect(const std::string& id, CancelToken* cancel);
  Result<Sandbox> Get(const std::string& id, CancelToken* cancel);
  Result<SandboxList> List(const std::vector<std::string>& states,
                           const std::map<std::string, std::string>& metadata, int limit,
                           const std::string& cursor, CancelToken* cancel);
  // false when the sandbox was already gone.
  Result<bool> Kill(const std::string& id, CancelToken* cancel);
  // New expiry, `seconds` from the server's now (clamped to the 60 s minimum).
  Result<std::string> SetTimeout(const std::string& id, int64_t seconds, CancelToken* cancel);
  Result<Sandbox> Pause(const std::string& id, CancelToken* cancel);
  Result<Sandbox> Resume(const std::string& id, CancelToken* cancel);
  // The server's merge patch of the sandbox's metadata (nullopt deletes a key); the keys
  // and values are checked against the server's label rules first (-32602 naming the
  // key as metadata.<key>).
  using MetadataPatch = std::vector<std::pair<std::string, std::optional<std::string>>>;
  Result<Sandbox> SetMetadata(const std::string& id, const MetadataPatch& patch, CancelToken* cancel);

  // alias → image, "base" → default_image, else verbatim.
  std::string ResolveImage(const std::string& template_name) const;
  // The reverse, for the Sandbox object: the alias or "base" an image came from.
  std::string TemplateOf(const std::string& image) const;
  // The request body of POST /sandboxes (exposed for tests).
  std::string CreateBody(const CreateSpec& spec) const;
  // The server pool the create takes its sandbox from: the call's, else the configured
  // one for a create of the default template (neither a template nor a snapshot named).
  std::string PoolRefOf(const CreateSpec& spec) const;

 private:
  // Create after its checks, with `deadline_ms` for Running and execd.
  Result<Sandbox> CreateRegistered(const CreateSpec& spec, int64_t deadline_ms, CancelToken* cancel,
                                   const ProgressFn& progress);
  // The snapshot of the template `spec.template_name` names, when it names one (not an
  // alias, not base, not a restore).
  Result<std::optional<std::string>> ResolveTemplate(const CreateSpec& spec, CancelToken* cancel);
  Status WaitUntilUsable(const opensandbox::SandboxRecord& created, int64_t deadline_ms,
                         CancelToken* cancel, const ProgressFn& progress);
  // The Sandbox object of a record: its template from its image, or for a restored
  // sandbox from its snapshot's name (at most one request per snapshot, remembered).
  Sandbox Wrap(opensandbox::SandboxRecord record, CancelToken* cancel);
  std::string TemplateOfSnapshot(const std::string& snapshot_id, CancelToken* cancel);

  EndpointCache* upstream_;
  const ProviderConfig* config_;
  opensandbox::LifecycleClient lifecycle_;
  std::set<std::string> unreadable_snapshots_;  // this object's calls do not ask again
};

}  // namespace abx::core
