#pragma once
// State kept for one server and one credential: the execd endpoints of its sandboxes.
// Sessions holding the same server URL and API key share one EndpointCache; a session with
// another key gets another, so a cached endpoint is never served across credentials.

#include <chrono>
#include <cstdint>
#include <deque>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "bridge/core/code_registry.h"
#include "bridge/core/config.h"
#include "bridge/core/parts.h"
#include "bridge/core/saved_entrypoint.h"
#include "bridge/core/shell_registry.h"
#include "bridge/core/stdin_pipes.h"
#include "bridge/opensandbox/execd_client.h"
#include "bridge/opensandbox/lifecycle_client.h"

namespace abx::core {

class EndpointCache {
 public:
  EndpointCache(opensandbox::HttpCaller* http, std::string lifecycle_url, std::string api_key)
      : http_(http), lifecycle_url_(std::move(lifecycle_url)), api_key_(std::move(api_key)) {}

  opensandbox::HttpCaller* http() { return http_; }
  // The templates of this server and key (name → snapshot id, templates.h), as last read;
  // nullopt when never read, forgotten, or older than `max_age`.
  std::optional<std::map<std::string, std::string>> CachedTemplates(std::chrono::steady_clock::duration max_age) const;
  // `generation` is TemplatesGeneration() from before the list was read: an index read
  // across a ForgetTemplates is not stored.
  void StoreTemplates(std::map<std::string, std::string> index, uint64_t generation);
  void ForgetTemplates();
  uint64_t TemplatesGeneration() const;

  // The template a snapshot is a version of ("" for none), once known: a snapshot's name
  // never changes. At most kMaxSnapshotTemplates are kept.
  static constexpr size_t kMaxSnapshotTemplates = 1024;
  std::optional<std::string> SnapshotTemplate(const std::string& snapshot_id) const;
  void NoteSnapshotTemplate(const std::string& snapshot_id, const std::string& template_name);

  // The launchers that snapshots of this server's sandboxes hold (saved_entrypoint.h).
  SavedEntrypointLeases& saved_entrypoints() { return saved_entrypoints_; }

  // A lifecycle client with the session's deadline.
  opensandbox::LifecycleClient Lifecycle(const ProviderConfig& config) const;

  // The execd of `sandbox_id`, from the cache or resolved through the lifecycle API.
  Result<opensandbox::ExecdClient> Execd(const std::string& sandbox_id, const ProviderConfig& config,
                            const CancelToken* cancel);
  // Drops what is cached for a sandbox (killed, gone, or its execd stopped answering).
  void Forget(const std::string& sandbox_id);
  size_t cached_sandboxes() const;

  // exec_id of the command started with ABX_EXEC_TAG=`tag` (see processes.h). An
  // attached command is forgotten when its stream ends (Exec::Run); detached ones are
  // remembered while their sandbox is cached, the newest kMaxRememberedExecs of them,
  // so a long-lived bridge does not grow with every command it ever started.
  static constexpr size_t kMaxRememberedExecs = 4096;
  void RememberExec(const std::string& sandbox_id, const std::string& tag,
                    const std::string& exec_id);
  void ForgetExec(const std::string& sandbox_id, const std::string& tag);
  std::string ExecIdForTag(const std::string& sandbox_id, const std::string& tag) const;

  // What a probe learned of a sandbox's execd (provider.doctor), kept until Forget.
  void NoteExecdVersion(const std::string& sandbox_id, const std::string& version);
  // Whether a sandbox's execd predates 1.0.19, as its behaviour showed (Files): nullopt
  // until something found out; kept with the endpoint until Forget.
  std::optional<bool> KnownBefore1019(const std::string& sandbox_id) const;
  void NoteBefore1019(const std::string& sandbox_id, bool before);

  // One cached execd endpoint, for `abx-opensandbox-bridge sandboxes`. The headers stay
  // out: they may carry the execd access token or a server-issued credential.
  struct CachedEndpoint {
    std::string sandbox_id;
    bool server_proxy = false;
    std::string base_url;
    std::string execd_version;  // empty when nothing probed it
    std::chrono::steady_clock::time_point since;
  };
  std::vector<CachedEndpoint> CachedEndpoints() const;
  const std::string& lifecycle_url() const { return lifecycle_url_; }

  // The code interpreters of this server's sandboxes (bridge/core/code/code.h).
  CodeRegistry& code() { return code_; }
  // The shells of this server's sandboxes (bridge/core/exec/shells.h).
  ShellRegistry& shells() { return shells_; }
  // The stdin pipes of commands started with stdin_stream (bridge/core/stdin_pipes.h).
  StdinPipes& stdin_pipes() { return stdin_pipes_; }
  // What capabilities above the core's root keep for this server and credential: the
  // files.watch hubs (WatchesOf, watches.h) and the terminals (TerminalsOf, terminals.h).
  Parts& parts() { return parts_; }

 private:
  SavedEntrypointLeases saved_entrypoints_;
  mutable std::mutex templates_mu_;
  std::optional<std::map<std::string, std::string>> templates_;  // under templates_mu_
  std::chrono::steady_clock::time_point templates_read_at_;
  uint64_t templates_generation_ = 0;  // under templates_mu_
  std::map<std::string, std::string> snapshot_templates_;  // under templates_mu_
  struct CacheEntry {
    opensandbox::ExecdTarget target;
    std::string sandbox_id;
    bool server_proxy = false;
    std::chrono::steady_clock::time_point since;
  };

  opensandbox::HttpCaller* http_;
  const std::string lifecycle_url_;
  const std::string api_key_;
  mutable std::mutex mu_;
  std::map<std::string, CacheEntry> endpoints_;   // by sandbox id + access mode + token
  std::map<std::string, std::string> execd_versions_;  // by sandbox id
  std::map<std::string, bool> execd_before_1019_;      // by sandbox id
  std::map<std::string, std::string> exec_tags_;   // sandbox id + "|" + tag → exec_id
  std::deque<std::string> exec_tag_order_;         // keys of exec_tags_, oldest first
  CodeRegistry code_;
  ShellRegistry shells_;
  StdinPipes stdin_pipes_;
  // Last, after the stdin pipes the watch hubs write through: destroyed first (the
  // terminals' sockets and the hubs go before the rest).
  Parts parts_;
};

// http:// or https:// (the lifecycle URL's scheme) + an endpoint without scheme.
std::string ExecdBaseUrl(const std::string& lifecycle_url, const std::string& endpoint);

// The endpoint to call execd at, from the server's endpoint for port 44772: a Docker
// server's bridge-mode answer `host:port/proxy/44772` names the host port that is execd's
// own, and the path sends every call once more through execd's reverse proxy to itself,
// which can abort a streamed answer and leave a code context busy for good
// (docs/opensandbox.md, "Seen on the real execd"). That shape loses its path; any other
// endpoint is kept as it is.
std::string DirectExecdEndpoint(const std::string& endpoint);

}  // namespace abx::core
