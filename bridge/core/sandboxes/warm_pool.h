#pragma once
// The daemon's warm pool (docs/epp1.md §3, "sandbox.pool extension"): per configured
// template, `count` sandboxes kept Running with execd answering, so that a matching
// sandbox.create hands one out in milliseconds instead of waiting for a container.
//
// Each pooled sandbox is made as `sandbox.create {template}` would make it, with the
// metadata label abx-pool = a key of the build, the server, the credential and the
// template's resolved settings, and the server timeout pool_ttl, renewed while it waits.
// So nothing outlives a dead daemon by more than pool_ttl; a daemon that starts adopts
// the Running sandboxes carrying its key (up to `count`, killing the rest); an orderly
// stop kills the pool; two builds' daemons have two keys and never take each other's.
//
// No thread per sandbox and no busy loop: the refills are background tasks of the core
// (at most `count` in flight per template), the renewals one timer per pool.

#include <chrono>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "bridge/base/cancel.h"
#include "bridge/base/error.h"
#include "bridge/core/config.h"
#include "bridge/core/parts.h"
#include "bridge/core/sandboxes/sandboxes.h"

namespace abx::core {

class BridgeCore;

inline constexpr const char* kPoolLabel = "abx-pool";

// The abx-pool label of a template's pooled sandboxes: "p" and 16 hex digits of a hash of
// `pool_scope` (the build and the user's secret salt, BridgeCore::Create), the server,
// the credential and what a create of the template sends. The label is readable on the
// server: the salt keeps the credential in it from being guessed offline.
std::string PoolKey(const std::string& pool_scope, const ProviderConfig& config, const std::string& template_name);

// Whether a sandbox.create may take a pooled sandbox (docs/epp1.md §3): the call names
// nothing but a template, metadata, a timeout and (in provider_options) ready_timeout,
// and it asks for an expiry. `only_ready_timeout_options`: the call's provider_options
// held nothing else.
bool CreateMayTakePooled(const CreateSpec& spec, const ProviderConfig& config, bool only_ready_timeout_options);

struct PoolState {
  int target = 0;
  int ready = 0;
  int creating = 0;
  int64_t taken = 0;
  std::string last_error;  // the last refill's failure; "" once one succeeds
};

class WarmPool : public Part {
 public:
  WarmPool(BridgeCore* core, std::string pool_scope);
  ~WarmPool();
  WarmPool(const WarmPool&) = delete;
  WarmPool& operator=(const WarmPool&) = delete;

  // A session's configuration: the pools of its server and credential become what its
  // `pool` names (the same again changes nothing; a template no longer named is
  // emptied, its sandboxes killed).
  void Configure(const ProviderConfig& config);

  // A pooled sandbox for this create, when the create may take one and one is ready:
  // its metadata made the call's, its timeout the call's, execd checked to answer.
  // nullopt when there is none: the caller creates as usual; nullopt too when `cancel`
  // came during a take, which put the sandbox back (the caller answers the cancel).
  std::optional<Sandbox> Take(const ProviderConfig& config, const CreateSpec& spec, CancelToken* cancel);

  // The pools of this config's server and credential, by template name.
  std::map<std::string, PoolState> States(const ProviderConfig& config) const;
  // Every pool, for the bridge's status: its credential scope (never shown: see
  // BridgeCore::CredentialLabel), its server and its template.
  struct ScopedState {
    std::string scope;
    std::string server;
    std::string template_name;
    PoolState state;
  };
  std::vector<ScopedState> AllStates() const;

  // An orderly stop: every pooled sandbox is killed, no refill starts again.
  void Shutdown();
  void Stop() override { Shutdown(); }

 private:
  struct Entry;
  struct Scope;

  void Fill(const std::shared_ptr<Entry>& entry);
  void Refill(std::shared_ptr<Entry> entry);
  void Adopt(std::shared_ptr<Entry> entry);
  void ScheduleRenewal(const std::shared_ptr<Entry>& entry);
  void Renew(std::shared_ptr<Entry> entry);
  void RenewOnce(const std::shared_ptr<Entry>& entry);
  void KillQuietly(const std::shared_ptr<Entry>& entry, const std::string& id);
  // The kill in the background; until it is done, no adoption takes `id`.
  void KillLater(const std::shared_ptr<Entry>& entry, const std::string& id);
  // The newest version (snapshot id) of the entry's template when it is one of the
  // provider's templates, else ""; nullopt when the server could not say.
  std::optional<std::string> CurrentVersion(const std::shared_ptr<Entry>& entry, const ProviderConfig& config, CancelToken* cancel);
  static bool IsTemplateOfOurs(const ProviderConfig& config, const std::string& name);
  std::optional<Sandbox> TryTake(const std::shared_ptr<Entry>& entry, const std::string& id,
                                 const std::string& version, const CreateSpec& spec, const ProviderConfig& config,
                                 CancelToken* cancel);
  // A take cancelled half-way: what it changed is undone (the call's metadata goes and the
  // pool's label comes back; the pool's lifetime again) and the sandbox is ready again,
  // first in line; killed instead when that fails or the pool is gone.
  void PutBack(const std::shared_ptr<Entry>& entry, const std::string& id, const std::string& version,
               const CreateSpec& spec, bool patched, bool renewed);

  BridgeCore* const core_;
  const std::string pool_scope_;
  mutable std::mutex mu_;
  std::map<std::string, Scope> scopes_;  // by ProviderConfig::CredentialScope()
  std::set<std::string> dying_;          // sandboxes whose kill is under way
  bool stopped_ = false;
};

// The daemon's warm pool: a part of the core (parts.h), made on first use.
WarmPool& WarmPoolOf(BridgeCore& core);

}  // namespace abx::core
