#include "bridge/core/sandboxes/warm_pool.h"

#include "bridge/core/fnv_hash.h"

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <set>

#include "bridge/base/log.h"
#include "bridge/core/bridge_core.h"
#include "bridge/core/sandboxes/metadata_labels.h"
#include "bridge/core/sandboxes/templates.h"

namespace abx::core {
namespace {

constexpr auto kFirstBackoff = std::chrono::milliseconds(1000);
constexpr auto kLongestBackoff = std::chrono::milliseconds(60000);
// A pooled sandbox is renewed three times per pool_ttl, so a renewal that fails once
// still leaves two chances before it expires.
constexpr int kRenewalsPerTtl = 3;
// A take tries at most this many pooled sandboxes, each ping waiting at most this long,
// so that a pool of dead ones costs a create little before it creates as usual.
constexpr int kMaxTakeAttempts = 2;
constexpr int64_t kTakePingMs = 1000;

// This host and user: two hosts or two users running the same build against one server
// have different keys, so neither adopts the other's sandboxes.
std::string HostAndUser() {
  char host[256] = {};
  gethostname(host, sizeof host - 1);
  return std::string(host) + "/" + std::to_string(getuid());
}


}  // namespace

std::string PoolKey(const std::string& pool_scope, const ProviderConfig& config, const std::string& template_name) {
  uint64_t hash = kFnvOffset;
  for (const std::string& part :
       {HostAndUser(), pool_scope, config.lifecycle_url, config.api_key, ResolveImage(config, template_name), config.platform_os,
        config.platform_arch, config.network_policy_json, config.registry_username, config.pool_ref,
        std::string(config.secure_access ? "secure" : "plain")}) {
    hash = Fnv1a(hash, part);
  }
  for (const std::string& word : config.entrypoint) hash = Fnv1a(hash, word);
  char key[20];
  std::snprintf(key, sizeof key, "p%016llx", static_cast<unsigned long long>(hash));
  return key;
}

bool CreateMayTakePooled(const CreateSpec& spec, const ProviderConfig& config, bool only_ready_timeout_options) {
  const bool expires = spec.timeout_s ? *spec.timeout_s > 0 : config.default_timeout_s > 0;
  return only_ready_timeout_options && expires && spec.env.empty() && spec.entrypoint.empty() && spec.cpu.empty() &&
         spec.memory.empty() && !spec.secure && spec.volumes.empty() && spec.snapshot_id.empty() &&
         spec.pool_ref.empty() && !spec.metadata.count(kPoolLabel);
}

struct WarmPool::Entry {
  std::string template_name;
  std::string key;
  ProviderConfig config;  // the session's that configured it: creates and renewals use it
  std::shared_ptr<EndpointCache> upstream;
  // Under WarmPool::mu_.
  int target = 0;
  std::deque<std::string> ready;
  // The template version (snapshot id) each ready sandbox was made from, as the server
  // shows it ("" for an image): a rebuilt template's old ones are never handed out.
  std::map<std::string, std::string> made_from;  // the server's snapshotId of each
  std::set<std::string> being_renewed;  // not handed out while their renewal is under way
  int creating = 0;
  int64_t taken = 0;
  std::string last_error;
  std::chrono::milliseconds backoff{0};
  bool backing_off = false;  // a retry is scheduled
  bool adopting = true;      // the server's sandboxes of this key are being looked for
  bool renewing = false;     // the renewal timer runs
  uint64_t renewal_generation = 0;  // a timer of an earlier generation does nothing
  bool renewal_running = false;     // a Renew round is under way
  bool renewal_again = false;       // ... and another was asked for meanwhile
  bool retired = false;      // no longer configured: its sandboxes are killed
  // Cancelled when it is retired or the pool stops: its refills under way stop waiting.
  CancelToken stop;
};

struct WarmPool::Scope {
  std::map<std::string, std::shared_ptr<Entry>> entries;  // by template name
};

WarmPool::WarmPool(BridgeCore* core, std::string pool_scope) : core_(core), pool_scope_(std::move(pool_scope)) {}

WarmPool::~WarmPool() = default;

WarmPool& WarmPoolOf(BridgeCore& core) {
  return core.parts().Get<WarmPool>([&] { return std::make_unique<WarmPool>(&core, core.pool_scope()); });
}

void WarmPool::Configure(const ProviderConfig& config) {
  std::vector<std::shared_ptr<Entry>> started, retired, renew_now;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stopped_) return;
    Scope& scope = scopes_[config.CredentialScope()];
    for (auto it = scope.entries.begin(); it != scope.entries.end();) {
      auto wanted = config.pool.find(it->first);
      const bool same = wanted != config.pool.end() && wanted->second > 0 &&
                        PoolKey(pool_scope_, config, it->first) == it->second->key;
      if (same) {
        Entry& entry = *it->second;
        entry.target = wanted->second;
        // What the key leaves out (the execd token, the proxy, the timeouts) is the
        // newest session's too: a fixed setting reaches refills and renewals.
        const bool ttl_changed = entry.config.pool_ttl_s != config.pool_ttl_s;
        entry.config = config;
        if (ttl_changed && !entry.adopting) {
          // The armed timer has the old period: a new one, and the new timeout at once.
          ++entry.renewal_generation;
          entry.renewing = false;
          renew_now.push_back(it->second);
        }
        ++it;
        continue;
      }
      it->second->retired = true;
      it->second->stop.Cancel();
      retired.push_back(it->second);
      it = scope.entries.erase(it);
    }
    for (const auto& [name, count] : config.pool) {
      if (count <= 0 || scope.entries.count(name)) continue;
      auto entry = std::make_shared<Entry>();
      entry->template_name = name;
      entry->key = PoolKey(pool_scope_, config, name);
      entry->config = config;
      entry->upstream = core_->EndpointCacheFor(config);
      entry->target = count;
      scope.entries[name] = entry;
      started.push_back(entry);
      log::Info("pool.configured", {{"template", name}, {"count", std::to_string(count)}, {"key", entry->key}});
    }
  }
  for (auto& entry : retired) {
    std::deque<std::string> ids;
    {
      std::lock_guard<std::mutex> lock(mu_);
      ids.swap(entry->ready);
      entry->made_from.clear();
    }
    log::Info("pool.retired", {{"template", entry->template_name}, {"killed", std::to_string(ids.size())}});
    for (const std::string& id : ids) KillLater(entry, id);
  }
  for (auto& entry : started) core_->RunInBackground([this, entry] { Adopt(entry); });
  for (auto& entry : renew_now) core_->RunInBackground([this, entry] { Renew(entry); });
  // A count raised on an entry that exists: its missing sandboxes start now.
  std::vector<std::shared_ptr<Entry>> all;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (auto& [name, entry] : scopes_[config.CredentialScope()].entries) all.push_back(entry);
  }
  for (auto& entry : all) Fill(entry);
}

void WarmPool::Adopt(std::shared_ptr<Entry> entry) {
  ProviderConfig config;
  {
    std::lock_guard<std::mutex> lock(mu_);
    config = entry->config;
  }
  // The Running sandboxes of this key a daemon before this one left: up to the target
  // are kept (and renewed at once), the rest killed.
  Sandboxes sandboxes(entry->upstream.get(), &config);
  CancelToken never;
  std::vector<std::string> found, pending;
  std::map<std::string, std::string> snapshot_of;  // the version each was made from
  std::string cursor;
  do {
    auto page = sandboxes.List({"Running", "Pending"}, {{kPoolLabel, entry->key}}, 200, cursor, &never);
    if (!page.ok()) {
      log::Warn("pool.adopt_failed", {{"template", entry->template_name}, {"error", page.error().message}});
      break;
    }
    for (const Sandbox& s : page->sandboxes) {
      // A Pending one is a dead daemon's half-made sandbox: killed with the surplus.
      (s.record.state == "Running" ? found : pending).push_back(s.record.id);
      snapshot_of[s.record.id] = s.record.snapshot_id;
    }
    cursor = page->next_cursor.value_or("");
  } while (!cursor.empty());
  std::vector<std::string> surplus;
  size_t adopted = 0;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (const std::string& id : found) {
      if (dying_.count(id)) continue;  // an earlier pool's, being killed
      if (!stopped_ && !entry->retired && static_cast<int>(entry->ready.size()) < entry->target) {
        entry->ready.push_back(id);
        entry->made_from[id] = snapshot_of[id];
        ++adopted;
      } else {
        surplus.push_back(id);
      }
    }
    for (const std::string& id : pending) {
      if (!dying_.count(id)) surplus.push_back(id);
    }
    entry->adopting = false;
  }
  if (!found.empty() || !pending.empty()) {
    log::Info("pool.adopted", {{"template", entry->template_name},
                               {"adopted", std::to_string(adopted)},
                               {"killed", std::to_string(surplus.size())}});
  }
  for (const std::string& id : surplus) KillQuietly(entry, id);
  Renew(entry);  // adopted ones get a full pool_ttl now; the timer starts
  Fill(entry);
}

void WarmPool::Fill(const std::shared_ptr<Entry>& entry) {
  int starts = 0;
  std::vector<std::string> surplus;  // a lowered count: the newest go
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stopped_ || entry->retired || entry->adopting) return;
    while (static_cast<int>(entry->ready.size()) > entry->target) {
      surplus.push_back(entry->ready.back());
      entry->made_from.erase(entry->ready.back());
      entry->ready.pop_back();
    }
    if (!entry->backing_off) {
      starts = entry->target - static_cast<int>(entry->ready.size()) - entry->creating;
      if (starts > 0) entry->creating += starts;
    }
  }
  for (const std::string& id : surplus) KillLater(entry, id);
  for (int i = 0; i < starts; ++i) core_->RunInBackground([this, entry] { Refill(entry); });
}

bool WarmPool::IsTemplateOfOurs(const ProviderConfig& config, const std::string& name) {
  return name != "base" && !config.image_aliases.count(name) && CheckTemplateName("template", name).ok();
}

std::optional<std::string> WarmPool::CurrentVersion(const std::shared_ptr<Entry>& entry,
                                                    const ProviderConfig& config, CancelToken* cancel) {
  if (!IsTemplateOfOurs(config, entry->template_name)) return "";
  auto found = TemplateSnapshot(entry->upstream.get(), config, entry->template_name, cancel);
  if (!found.ok()) return std::nullopt;  // unknown now: no reason to throw good ones away
  return *found ? **found : "";
}

void WarmPool::KillLater(const std::shared_ptr<Entry>& entry, const std::string& id) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    dying_.insert(id);
  }
  core_->RunInBackground([this, entry, id] {
    KillQuietly(entry, id);
    std::lock_guard<std::mutex> lock(mu_);
    dying_.erase(id);
  });
}

void WarmPool::Refill(std::shared_ptr<Entry> entry) {
  ProviderConfig config;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stopped_ || entry->retired) {
      --entry->creating;
      return;
    }
    config = entry->config;
  }
  // Made as `sandbox.create {template}` would make it, labelled and with pool_ttl.
  CreateSpec spec;
  spec.template_name = entry->template_name;
  spec.timeout_s = config.pool_ttl_s;
  spec.metadata = {{kPoolLabel, entry->key}};
  Sandboxes sandboxes(entry->upstream.get(), &config);
  auto made = sandboxes.Create(spec, &entry->stop, {});
  bool kill = false;
  {
    std::lock_guard<std::mutex> lock(mu_);
    --entry->creating;
    if (made.ok()) {
      kill = stopped_ || entry->retired;
      if (kill) dying_.insert(made->record.id);  // not adopted by a pool that replaces this one
      if (!kill) {
        entry->ready.push_back(made->record.id);
        entry->made_from[made->record.id] = made->record.snapshot_id;
        entry->last_error.clear();
        entry->backoff = std::chrono::milliseconds(0);
      }
    } else {
      entry->last_error = log::Scrub(made.error().message);
      // One step of back-off per round of failures, not per failed create.
      if (!entry->backing_off && !stopped_ && !entry->retired) {
        entry->backoff = std::clamp(entry->backoff * 2, std::chrono::milliseconds(kFirstBackoff),
                                    std::chrono::milliseconds(kLongestBackoff));
        entry->backing_off = true;
        core_->RunInBackgroundAt(std::chrono::steady_clock::now() + entry->backoff, [this, entry] {
          {
            std::lock_guard<std::mutex> lock(mu_);
            entry->backing_off = false;
          }
          Fill(entry);
        });
      }
    }
  }
  if (!made.ok()) {
    log::Warn("pool.refill_failed", {{"template", entry->template_name}, {"error", made.error().message}});
    return;
  }
  if (kill) {
    KillQuietly(entry, made->record.id);
    std::lock_guard<std::mutex> lock(mu_);
    dying_.erase(made->record.id);
    return;
  }
  Fill(entry);  // one too many when a cancelled take put its sandbox back meanwhile
}

void WarmPool::ScheduleRenewal(const std::shared_ptr<Entry>& entry) {
  std::chrono::milliseconds period;
  uint64_t generation;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stopped_ || entry->retired || entry->renewing) return;
    entry->renewing = true;
    generation = entry->renewal_generation;
    period = std::chrono::milliseconds(entry->config.pool_ttl_s * 1000LL / kRenewalsPerTtl);
  }
  core_->RunInBackgroundAt(std::chrono::steady_clock::now() + period, [this, entry, generation] {
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (generation != entry->renewal_generation) return;  // replaced (pool_ttl changed)
      entry->renewing = false;
    }
    Renew(entry);
  });
}

void WarmPool::Renew(std::shared_ptr<Entry> entry) {
  // One round at a time: two (a changed pool_ttl's and the timer's) could each set a
  // sandbox's timeout, the older value last, or clear each other's being_renewed mark.
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (entry->renewal_running) {
      entry->renewal_again = true;
      return;
    }
    entry->renewal_running = true;
  }
  for (;;) {
    RenewOnce(entry);
    std::lock_guard<std::mutex> lock(mu_);
    if (!entry->renewal_again) {
      entry->renewal_running = false;
      return;
    }
    entry->renewal_again = false;
  }
}

void WarmPool::RenewOnce(const std::shared_ptr<Entry>& entry) {
  ProviderConfig config;
  std::vector<std::string> ids;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stopped_ || entry->retired) return;
    config = entry->config;
    ids.assign(entry->ready.begin(), entry->ready.end());
  }
  Sandboxes sandboxes(entry->upstream.get(), &config);
  CancelToken never;
  bool lost = false;
  for (const std::string& id : ids) {
    {
      // Taken meanwhile: its timeout is its taker's now. Marked, it is not taken while
      // this renewal is under way.
      std::lock_guard<std::mutex> lock(mu_);
      if (std::find(entry->ready.begin(), entry->ready.end(), id) == entry->ready.end()) continue;
      entry->being_renewed.insert(id);
    }
    auto renewed = sandboxes.SetTimeout(id, config.pool_ttl_s, &never);
    std::lock_guard<std::mutex> lock(mu_);
    entry->being_renewed.erase(id);
    if (renewed.ok() || renewed.error().code != ErrorCode::kNotFound) continue;
    // The server ended it (expired, killed by hand): no longer in the pool.
    auto& ready = entry->ready;
    ready.erase(std::remove(ready.begin(), ready.end(), id), ready.end());
    entry->made_from.erase(id);
    lost = true;
  }
  if (lost) Fill(entry);
  ScheduleRenewal(entry);
}

void WarmPool::KillQuietly(const std::shared_ptr<Entry>& entry, const std::string& id) {
  ProviderConfig config;
  {
    std::lock_guard<std::mutex> lock(mu_);
    config = entry->config;
  }
  Sandboxes sandboxes(entry->upstream.get(), &config);
  CancelToken never;
  auto killed = sandboxes.Kill(id, &never);
  if (!killed.ok()) log::Warn("pool.kill_failed", {{"sandbox_id", id}, {"error", killed.error().message}});
}

std::optional<Sandbox> WarmPool::Take(const ProviderConfig& config, const CreateSpec& spec, CancelToken* cancel) {
  const std::string name = spec.template_name.empty() ? "base" : spec.template_name;
  std::shared_ptr<Entry> entry;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto scope = scopes_.find(config.CredentialScope());
    if (scope == scopes_.end()) return std::nullopt;
    auto found = scope->second.entries.find(name);
    if (found == scope->second.entries.end()) return std::nullopt;
    entry = found->second;
  }
  // The call's own settings must make the same sandbox as the pool's.
  if (PoolKey(pool_scope_, config, name) != entry->key) return std::nullopt;
  // Metadata the server's label rules refuse: the normal create says so, and no pooled
  // sandbox is spent on it.
  for (const auto& [key, value] : spec.metadata) {
    if (!LabelKeyProblem(key).empty() || !LabelValueProblem(value).empty()) return std::nullopt;
  }
  const std::optional<std::string> current = CurrentVersion(entry, config, cancel);
  for (int attempt = 0; attempt < kMaxTakeAttempts && !cancel->cancelled(); ++attempt) {
    std::string id, version;
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (stopped_) return std::nullopt;
      auto it = std::find_if(entry->ready.begin(), entry->ready.end(),
                             [&](const std::string& candidate) { return !entry->being_renewed.count(candidate); });
      if (it == entry->ready.end()) return std::nullopt;
      id = *it;
      entry->ready.erase(it);
      version = entry->made_from[id];
      entry->made_from.erase(id);
    }
    Fill(entry);  // its replacement starts at once
    if (current && version != *current) {  // made from a version of the template since replaced
      log::Info("pool.take_skipped", {{"sandbox_id", id}, {"template", entry->template_name}, {"why", "stale"}});
      KillLater(entry, id);
      continue;
    }
    if (auto taken = TryTake(entry, id, version, spec, config, cancel)) {
      std::lock_guard<std::mutex> lock(mu_);
      ++entry->taken;
      return taken;
    }
  }
  return std::nullopt;
}

std::optional<Sandbox> WarmPool::TryTake(const std::shared_ptr<Entry>& entry, const std::string& id,
                                         const std::string& version, const CreateSpec& spec,
                                         const ProviderConfig& config, CancelToken* cancel) {
  Sandboxes sandboxes(entry->upstream.get(), &config);
  auto fail = [&](const std::string& why) -> std::optional<Sandbox> {
    log::Info("pool.take_skipped", {{"sandbox_id", id}, {"template", entry->template_name}, {"why", why}});
    KillLater(entry, id);
    return std::nullopt;
  };
  // A cancel puts the sandbox back. So that what to undo is known, the two changes are
  // never abandoned half-way; the cancel is honoured right after each.
  CancelToken never;
  auto put_back = [&](bool patched, bool renewed) -> std::optional<Sandbox> {
    PutBack(entry, id, version, spec, patched, renewed);
    return std::nullopt;
  };
  if (cancel->cancelled()) return put_back(false, false);
  // Its metadata becomes exactly the call's: the pool's label goes.
  Sandboxes::MetadataPatch patch;
  bool label_given = false;
  for (const auto& [key, value] : spec.metadata) {
    patch.emplace_back(key, value);
    label_given = label_given || key == kPoolLabel;
  }
  if (!label_given) patch.emplace_back(kPoolLabel, std::nullopt);
  auto patched = sandboxes.SetMetadata(id, patch, &never);
  if (!patched.ok()) return fail("metadata: " + patched.error().message);
  Sandbox sandbox = std::move(patched).value();
  if (sandbox.record.state != "Running") return fail("it is " + sandbox.record.state);
  if (cancel->cancelled()) return put_back(true, false);
  const int64_t timeout = spec.timeout_s.value_or(config.default_timeout_s);
  auto expires = sandboxes.SetTimeout(id, timeout, &never);
  if (!expires.ok()) return fail("timeout: " + expires.error().message);
  sandbox.record.expires_at = *expires;
  if (cancel->cancelled()) return put_back(true, true);
  auto execd = entry->upstream->Execd(id, config, cancel);
  if (!execd.ok() && execd.error().code == ErrorCode::kCancelled) return put_back(true, true);
  if (!execd.ok()) return fail("execd: " + execd.error().message);
  Status ping = execd->Ping(cancel, kTakePingMs);
  if (!ping.ok() && ping.error().code == ErrorCode::kCancelled) return put_back(true, true);
  if (!ping.ok()) return fail("execd: " + ping.error().message);
  // As a normal create names it (from the image or the template's snapshot, Wrap).
  if (sandbox.template_name.empty()) sandbox.template_name = sandboxes.TemplateOf(ResolveImage(config, spec.template_name));
  return sandbox;
}

void WarmPool::PutBack(const std::shared_ptr<Entry>& entry, const std::string& id, const std::string& version,
                       const CreateSpec& spec, bool patched, bool renewed) {
  // The pool's own settings: a caller's pool_ttl may differ (it is not in the key). While
  // the sandbox is restored it counts as dying, so that a pool adopting this one's
  // sandboxes (one that replaced it) does not take it meanwhile.
  ProviderConfig config;
  std::string failed;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stopped_ || entry->retired) failed = "the pool is gone";
    config = entry->config;
    dying_.insert(id);
  }
  Sandboxes sandboxes(entry->upstream.get(), &config);
  CancelToken never;  // the request is gone; the pool must be whole again
  if (failed.empty() && patched) {
    Sandboxes::MetadataPatch undo;
    for (const auto& [key, value] : spec.metadata) undo.emplace_back(key, std::nullopt);
    undo.emplace_back(kPoolLabel, entry->key);
    auto restored = sandboxes.SetMetadata(id, undo, &never);
    if (!restored.ok()) failed = "metadata: " + restored.error().message;
    else if (restored->record.state != "Running") failed = "it is " + restored->record.state;
  }
  if (failed.empty() && renewed) {
    auto expires = sandboxes.SetTimeout(id, config.pool_ttl_s, &never);
    if (!expires.ok()) failed = "timeout: " + expires.error().message;
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (failed.empty() && (stopped_ || entry->retired)) failed = "the pool is gone";
    if (failed.empty()) {
      dying_.erase(id);
      entry->ready.push_front(id);
      entry->made_from[id] = version;
    }
  }
  if (!failed.empty()) {
    log::Info("pool.take_skipped", {{"sandbox_id", id}, {"template", entry->template_name}, {"why", failed}});
    KillLater(entry, id);  // it stays dying until killed
    return;
  }
  log::Info("pool.take_cancelled", {{"sandbox_id", id}, {"template", entry->template_name}});
  Fill(entry);  // the replacement the take started makes one too many: the newest goes
}

std::map<std::string, PoolState> WarmPool::States(const ProviderConfig& config) const {
  std::map<std::string, PoolState> out;
  std::lock_guard<std::mutex> lock(mu_);
  auto scope = scopes_.find(config.CredentialScope());
  if (scope == scopes_.end()) return out;
  for (const auto& [name, entry] : scope->second.entries) {
    PoolState& s = out[name];
    s.target = entry->target;
    s.ready = static_cast<int>(entry->ready.size());
    s.creating = entry->creating;
    s.taken = entry->taken;
    s.last_error = entry->last_error;
  }
  return out;
}

std::vector<WarmPool::ScopedState> WarmPool::AllStates() const {
  std::vector<ScopedState> out;
  std::lock_guard<std::mutex> lock(mu_);
  for (const auto& [scope, pools] : scopes_) {
    for (const auto& [name, entry] : pools.entries) {
      ScopedState s;
      s.scope = scope;
      s.server = WithoutUserInfo(entry->config.lifecycle_url);
      s.template_name = name;
      s.state = {entry->target, static_cast<int>(entry->ready.size()), entry->creating, entry->taken,
                 entry->last_error};
      out.push_back(std::move(s));
    }
  }
  return out;
}

void WarmPool::Shutdown() {
  std::vector<std::pair<std::shared_ptr<Entry>, std::string>> kills;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stopped_) return;
    stopped_ = true;
    for (auto& [scope_name, scope] : scopes_) {
      for (auto& [name, entry] : scope.entries) {
        entry->stop.Cancel();
        for (const std::string& id : entry->ready) kills.emplace_back(entry, id);
        entry->ready.clear();
        entry->made_from.clear();
      }
    }
  }
  if (!kills.empty()) log::Info("pool.stopping", {{"killed", std::to_string(kills.size())}});
  for (const auto& [entry, id] : kills) KillQuietly(entry, id);
}

}  // namespace abx::core
