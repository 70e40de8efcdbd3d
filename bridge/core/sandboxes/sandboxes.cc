#include "bridge/core/sandboxes/sandboxes.h"

#include <algorithm>
#include <chrono>
#include <thread>

#include "bridge/base/json.h"
#include "bridge/base/log.h"
#include "bridge/base/time_util.h"
#include "bridge/core/sandboxes/metadata_labels.h"
#include "bridge/core/sandboxes/offset_pages.h"
#include "bridge/core/sandboxes/templates.h"
#include "bridge/core/saved_entrypoint.h"

namespace abx::core {
namespace {

constexpr auto kPollInterval = std::chrono::milliseconds(200);  // as the official SDK
constexpr int64_t kMinTimeoutSeconds = 60;                      // the server's minimum

bool IsFinalState(const std::string& state) { return state == "Failed" || state == "Terminated"; }

// How often the wait for execd asks the server whether the sandbox still lives.
constexpr int kPingsPerStateCheck = 5;

Error EndedWhileStarting(const std::string& id, const opensandbox::SandboxRecord& record) {
  std::string why;
  if (!record.reason.empty()) why = record.reason;
  if (!record.message.empty()) why += (why.empty() ? "" : ": ") + record.message;
  return MakeError(ErrorCode::kUpstream, "sandbox " + id + " ended up " + record.state +
                                             " while starting" +
                                             (why.empty() ? "" : " (" + why + ")"));
}

Error Cancelled(const std::string& what) {
  return MakeError(ErrorCode::kCancelled, what + " was cancelled");
}

}  // namespace

std::string ResolveImage(const ProviderConfig& config, const std::string& template_name) {
  auto alias = config.image_aliases.find(template_name);
  if (alias != config.image_aliases.end()) return alias->second;
  if (template_name.empty() || template_name == "base") return config.default_image;
  return template_name;
}

std::string Sandboxes::ResolveImage(const std::string& template_name) const {
  return core::ResolveImage(*config_, template_name);
}

std::string Sandboxes::TemplateOf(const std::string& image) const {
  for (const auto& [alias, target] : config_->image_aliases) {
    if (target == image) return alias;
  }
  if (image == config_->default_image) return "base";
  return image;
}

Sandbox Sandboxes::Wrap(opensandbox::SandboxRecord record, CancelToken* cancel) {
  Sandbox sandbox;
  // A restored sandbox has no image of its own, only its snapshot (docs/opensandbox.md §1.12).
  if (!record.image.empty()) {
    sandbox.template_name = TemplateOf(record.image);
  } else if (!record.snapshot_id.empty()) {
    sandbox.template_name = TemplateOfSnapshot(record.snapshot_id, cancel);
  }
  sandbox.record = std::move(record);
  return sandbox;
}

std::string Sandboxes::TemplateOfSnapshot(const std::string& snapshot_id, CancelToken* cancel) {
  if (auto known = upstream_->SnapshotTemplate(snapshot_id)) return *known;
  if (unreadable_snapshots_.count(snapshot_id)) return "";
  auto snapshot = lifecycle_.GetSnapshot(snapshot_id, cancel);
  if (!snapshot.ok()) {
    // Gone (a template's older version is deleted once a newer one is Ready): no name
    // to find, ever. Any other failure is not worth failing the call for: asked again
    // by a later call, not for each of this one's sandboxes.
    if (snapshot.error().code == ErrorCode::kNotFound) {
      upstream_->NoteSnapshotTemplate(snapshot_id, "");
    } else {
      unreadable_snapshots_.insert(snapshot_id);
    }
    return "";
  }
  const std::string prefix = kTemplateSnapshotPrefix;
  std::string name = snapshot->name.rfind(prefix, 0) == 0 ? snapshot->name.substr(prefix.size()) : "";
  upstream_->NoteSnapshotTemplate(snapshot_id, name);
  return name;
}

bool IsCodeInterpreterImage(const std::string& image) {
  // registry[:port]/path/name[:tag][@digest]: the repository is what precedes the tag,
  // and a tag's ':' comes after the last '/'.
  std::string repository = image.substr(0, image.find('@'));
  const size_t colon = repository.rfind(':');
  const size_t slash = repository.rfind('/');
  if (colon != std::string::npos && (slash == std::string::npos || colon > slash)) {
    repository.resize(colon);
  }
  const std::string suffix = "code-interpreter";
  return repository.size() >= suffix.size() &&
         repository.compare(repository.size() - suffix.size(), suffix.size(), suffix) == 0;
}

std::string Sandboxes::PoolRefOf(const CreateSpec& spec) const {
  if (!spec.pool_ref.empty()) return spec.pool_ref;
  const bool default_template = spec.template_name.empty() || spec.template_name == "base";
  return default_template && spec.snapshot_id.empty() ? config_->pool_ref : "";
}

std::string Sandboxes::CreateBody(const CreateSpec& spec) const {
  const std::string pool_ref = PoolRefOf(spec);
  const std::string image = ResolveImage(spec.template_name);
  std::vector<std::string> entrypoint = spec.entrypoint;
  if (!pool_ref.empty()) {
    // The pool's template gives the image, the resources and (unless the call names
    // one) the entrypoint (docs/opensandbox.md §1.13).
  } else if (!spec.snapshot_id.empty()) {
    // The server would start `tail -f /dev/null`: the launcher sandbox.snapshot left in
    // the snapshot runs what the source ran (docs/mapping.md, "Snapshots").
    if (entrypoint.empty()) entrypoint = {kSavedEntrypointPath};
  } else if (entrypoint.empty()) {
    // The code-interpreter images start Jupyter from their own script, which the sandbox
    // must run as its entrypoint (docs/opensandbox.md §2.13); every
    // other image only needs to stay alive for execd, as the configured default does.
    entrypoint = IsCodeInterpreterImage(image) ? std::vector<std::string>{kCodeInterpreterScript}
                                               : config_->entrypoint;
  }
  std::string body = "{";
  if (!pool_ref.empty()) {
    body += "\"extensions\":{\"poolRef\":" + json::Quote(pool_ref) + "}";
  } else if (!spec.snapshot_id.empty()) {
    body += "\"snapshotId\":" + json::Quote(spec.snapshot_id);
  } else {
    body += "\"image\":{\"uri\":" + json::Quote(image);
    if (!config_->registry_username.empty()) {
      body += ",\"auth\":{\"username\":" + json::Quote(config_->registry_username) +
              ",\"password\":" + json::Quote(config_->registry_password) + "}";
    }
    body += "}";
  }
  if (!entrypoint.empty()) body += ",\"entrypoint\":" + json::ArrayOfStrings(entrypoint);
  std::map<std::string, std::string> limits;
  if (pool_ref.empty()) {
    limits = {{"cpu", spec.cpu.empty() ? "1" : spec.cpu}, {"memory", spec.memory.empty() ? "2Gi" : spec.memory}};
  } else {  // only what the call names: the pool's template has the rest
    if (!spec.cpu.empty()) limits["cpu"] = spec.cpu;
    if (!spec.memory.empty()) limits["memory"] = spec.memory;
  }
  if (!limits.empty()) body += ",\"resourceLimits\":" + json::ObjectOfStrings(limits);
  body += ",\"env\":" + json::ObjectOfStrings(spec.env);
  body += ",\"metadata\":" + json::ObjectOfStrings(spec.metadata);
  const int64_t timeout = spec.timeout_s.value_or(config_->default_timeout_s);
  if (timeout > 0) body += ",\"timeout\":" + std::to_string(std::max(timeout, kMinTimeoutSeconds));
  // A pool's pods were made before the request: the server refuses a network policy or
  // a platform with poolRef, so the configured ones apply to the other creates only.
  if (!config_->network_policy_json.empty() && pool_ref.empty()) {
    body += ",\"networkPolicy\":" + config_->network_policy_json;
  }
  if (!config_->platform_os.empty() && pool_ref.empty()) {
    body += ",\"platform\":{\"os\":" + json::Quote(config_->platform_os) +
            ",\"arch\":" + json::Quote(config_->platform_arch) + "}";
  }
  if (!spec.volumes.empty()) body += ",\"volumes\":" + VolumesJson(spec.volumes);
  body += std::string(",\"secureAccess\":") +
          (spec.secure.value_or(config_->secure_access) ? "true" : "false");
  body += "}";
  return body;
}

Result<std::optional<std::string>> Sandboxes::ResolveTemplate(const CreateSpec& spec, CancelToken* cancel) {
  const std::string& name = spec.template_name;
  if (!spec.snapshot_id.empty() || !spec.pool_ref.empty() || name.empty() || name == "base" ||
      config_->image_aliases.count(name)) {
    return std::optional<std::string>();
  }
  auto found = TemplateSnapshot(upstream_, *config_, name, cancel);
  if (!found.ok()) {
    Error e = found.error();
    // Only a server that has no snapshots makes the name an image; any other failure
    // (refused key, unreachable server, cancel) is the create's.
    if (e.http_status != 404 && e.http_status != 501) return e.Within("look up template " + name);
    log::Info("template.lookup_unsupported", {{"template", name}, {"error", e.message}});
    upstream_->StoreTemplates({}, upstream_->TemplatesGeneration());
    return std::optional<std::string>();
  }
  return found;
}

Result<Sandbox> Sandboxes::Create(const CreateSpec& requested, CancelToken* cancel,
                                  const ProgressFn& progress) {
  const int64_t deadline = NowMillis() + static_cast<int64_t>(config_->ready_timeout_s * 1000);
  if (!PoolRefOf(requested).empty() && !requested.volumes.empty()) {
    return InvalidParams("volumes", "volumes cannot be mounted into a sandbox from a pool (pool_ref): its pods "
                                    "were made before the request");
  }
  // An OSS key secret is in the request body only; should the server ever repeat it,
  // no log line and no error carries it.
  for (const Volume& v : requested.volumes) {
    if (v.ossfs) log::RegisterSecret(v.ossfs->access_key_secret);
  }
  auto created_sandbox = CreateRegistered(requested, deadline, cancel, progress);
  if (!created_sandbox.ok() && !requested.volumes.empty()) created_sandbox.error().message = log::Scrub(created_sandbox.error().message);
  return created_sandbox;
}

Result<Sandbox> Sandboxes::CreateRegistered(const CreateSpec& requested, int64_t deadline, CancelToken* cancel,
                                            const ProgressFn& progress) {
  // A template name stands for its newest snapshot (templates.h).
  CreateSpec spec = requested;
  ABX_ASSIGN_OR_RETURN(std::optional<std::string> template_snapshot, ResolveTemplate(requested, cancel));
  if (template_snapshot) spec.snapshot_id = *template_snapshot;
  if (cancel->cancelled()) return Cancelled("sandbox.create");
  // The POST itself is not cancelled half-way: a sandbox the server made must be known
  // to be killed. A cancel during it is honoured right after.
  auto created = lifecycle_.Create(CreateBody(spec), nullptr);
  if (!created.ok() && template_snapshot &&
      (created.error().http_status == 404 || created.error().http_status == 409)) {
    // A rebuild replaced the version just resolved (gone: 404, being deleted: 409): read
    // the templates again, once; with none left, the name is an image as any other.
    upstream_->ForgetTemplates();
    ABX_ASSIGN_OR_RETURN(template_snapshot, ResolveTemplate(requested, cancel));
    spec = requested;
    if (template_snapshot) spec.snapshot_id = *template_snapshot;
    created = lifecycle_.Create(CreateBody(spec), nullptr);
  }
  if (!created.ok()) return created.error().Within("create sandbox");
  const std::string id = created->id;
  Status ready = cancel->cancelled()
                     ? Status(Cancelled("sandbox.create"))
                     : WaitUntilUsable(*created, deadline, cancel, progress);
  if (!ready.ok()) {
    Error failed = ready.error();
    const bool not_found = failed.code == ErrorCode::kUpstream && failed.message.find("code 127") != std::string::npos;
    if (!spec.snapshot_id.empty() && spec.entrypoint.empty() && not_found) {
      failed.message += "; snapshot " + spec.snapshot_id +
                        " holds no saved entrypoint (it was not made by sandbox.snapshot): pass the call's entrypoint";
    } else if (spec.snapshot_id.empty() && spec.entrypoint.empty() && IsCodeInterpreterImage(ResolveImage(spec.template_name)) &&
               not_found) {
      // The script is missing: images before code-interpreter v1.1.0 keep it elsewhere
      // (docs/opensandbox.md §2.17); the contract fixes the entrypoint, the call can name it.
      failed.message += "; a code-interpreter image older than v1.1.0 keeps its start script at " +
                        std::string(kOldCodeInterpreterScript) + ": pass it as the call's entrypoint";
    }
    // Never leak the half-made sandbox, whatever went wrong (uncancellable clean-up).
    Status killed = lifecycle_.Delete(id, nullptr);
    upstream_->Forget(id);
    log::Warn("sandbox.create_failed", {{"sandbox_id", id},
                                        {"error", failed.message},
                                        {"killed", killed.ok() ? "yes" : killed.error().message}});
    return failed;
  }
  auto record = lifecycle_.Get(id, nullptr);
  opensandbox::SandboxRecord out = record.ok() ? std::move(record).value() : std::move(created).value();
  if (out.image.empty() && spec.snapshot_id.empty() && PoolRefOf(spec).empty()) {
    out.image = ResolveImage(spec.template_name);
  }
  if (out.snapshot_id.empty()) out.snapshot_id = spec.snapshot_id;  // the create's answer has none
  if (template_snapshot) upstream_->NoteSnapshotTemplate(*template_snapshot, requested.template_name);
  Sandbox sandbox = Wrap(std::move(out), cancel);
  if (template_snapshot) sandbox.template_name = requested.template_name;
  return sandbox;
}

Status Sandboxes::WaitUntilUsable(const opensandbox::SandboxRecord& created, int64_t deadline_ms,
                                  CancelToken* cancel, const ProgressFn& progress) {
  const std::string& id = created.id;
  auto timed_out = [&](const std::string& what) {
    return MakeError(ErrorCode::kTimeout, "sandbox " + id + " was not ready within ready_timeout (" +
                                              what + ")");
  };
  // 1. Running, as the server sees it (create normally answers Running at once).
  opensandbox::SandboxRecord last = created;
  std::string state = created.state;
  while (state != "Running") {
    if (IsFinalState(state)) return EndedWhileStarting(id, last);
    if (progress) progress(state.empty() ? "Pending" : state, "waiting for the sandbox to run");
    if (NowMillis() >= deadline_ms) return timed_out("still " + state);
    if (!cancel->SleepFor(kPollInterval)) return Cancelled("sandbox.create");
    auto record = lifecycle_.Get(id, cancel);
    if (!record.ok()) {
      if (record.error().code == ErrorCode::kCancelled) return Cancelled("sandbox.create");
      if (record.error().code == ErrorCode::kNotFound) return record.error();
      continue;  // transient: keep polling until the deadline
    }
    state = record->state;
    last = std::move(record).value();
  }
  // 2. execd answers: Running does not mean execd is up (docs/opensandbox.md §1.5).
  // Meanwhile the sandbox may fail (an entrypoint the image does not have exits at
  // once): every few pings the server is asked, so that ends the wait with its reason.
  bool reported = false;
  for (int attempt = 1;; ++attempt) {
    if (cancel->cancelled()) return Cancelled("sandbox.create");
    if (attempt % kPingsPerStateCheck == 0) {
      auto record = lifecycle_.Get(id, cancel);
      if (record.ok() && IsFinalState(record->state)) return EndedWhileStarting(id, *record);
    }
    auto execd = upstream_->Execd(id, *config_, cancel);
    if (execd.ok()) {
      const int64_t left = std::max<int64_t>(1, deadline_ms - NowMillis());
      Status ping = execd->Ping(cancel, std::min<int64_t>(left, 2000));
      if (ping.ok()) return OkStatus();
      // An execd that refuses the access token answers, and will refuse it until the
      // deadline: report that now, not "execd did not answer" after ready_timeout.
      if (ping.error().code == ErrorCode::kAuth) {
        Error refused = ping.error();
        return refused.Within("sandbox " + id);
      }
    } else if (execd.error().code == ErrorCode::kNotFound ||
               execd.error().code == ErrorCode::kAuth) {
      return execd.error();
    }
    if (!reported && progress) {
      progress("Running", "waiting for execd to answer");
      reported = true;
    }
    if (NowMillis() >= deadline_ms) return timed_out("execd did not answer");
    if (!cancel->SleepFor(kPollInterval)) return Cancelled("sandbox.create");
  }
}

Result<Sandbox> Sandboxes::Connect(const std::string& id, CancelToken* cancel) {
  auto record = lifecycle_.Get(id, cancel);
  if (!record.ok()) return record.error();
  if (IsFinalState(record->state)) {
    return MakeError(ErrorCode::kInvalidState, "sandbox " + id + " is " + record->state);
  }
  return Wrap(std::move(record).value(), cancel);
}

Result<Sandbox> Sandboxes::Get(const std::string& id, CancelToken* cancel) {
  auto record = lifecycle_.Get(id, cancel);
  if (!record.ok()) return record.error();
  return Wrap(std::move(record).value(), cancel);
}

Result<SandboxList> Sandboxes::List(const std::vector<std::string>& states,
                                    const std::map<std::string, std::string>& metadata,
                                    int limit, const std::string& cursor, CancelToken* cancel) {
  using Page = std::pair<std::vector<opensandbox::SandboxRecord>, bool>;
  ABX_ASSIGN_OR_RETURN(OffsetPage<opensandbox::SandboxRecord> read,
                       ReadFromCursor<opensandbox::SandboxRecord>(cursor, limit, [&](int page, int size) -> Result<Page> {
                         auto result = lifecycle_.List(states, metadata, page, size, cancel);
                         if (!result.ok()) return result.error();
                         return Page(std::move(result->items), result->has_next);
                       }));
  SandboxList out;
  for (auto& record : read.items) out.sandboxes.push_back(Wrap(std::move(record), cancel));
  out.next_cursor = std::move(read.next_cursor);
  return out;
}

Result<Sandbox> Sandboxes::SetMetadata(const std::string& id, const MetadataPatch& patch, CancelToken* cancel) {
  std::string body = "{";
  for (const auto& [key, value] : patch) {
    std::string problem = LabelKeyProblem(key);
    if (problem.empty() && value) problem = LabelValueProblem(*value);
    if (!problem.empty()) return InvalidParams("metadata." + key, "metadata key " + json::Quote(key) + ": " + problem);
    if (body.size() > 1) body += ",";
    body += json::Quote(key) + ":" + (value ? json::Quote(*value) : std::string("null"));
  }
  body += "}";
  auto patched = lifecycle_.PatchMetadata(id, body, cancel);
  if (!patched.ok()) return patched.error().Within("sandbox.set_metadata");
  return Wrap(std::move(patched).value(), cancel);
}

Result<bool> Sandboxes::Kill(const std::string& id, CancelToken* cancel) {
  Status st = lifecycle_.Delete(id, cancel);
  upstream_->Forget(id);
  if (st.ok()) return true;
  if (st.error().code == ErrorCode::kNotFound) return false;  // idempotent: already gone
  return st.error();
}

Result<std::string> Sandboxes::SetTimeout(const std::string& id, int64_t seconds,
                                          CancelToken* cancel) {
  int64_t server_now = 0;
  auto record = lifecycle_.Get(id, cancel, &server_now);
  if (!record.ok()) return record.error();
  const int64_t expires = server_now + std::max(seconds, kMinTimeoutSeconds) * 1000;
  return lifecycle_.Renew(id, FormatRfc3339Millis(expires), cancel);
}

Result<Sandbox> Sandboxes::Pause(const std::string& id, CancelToken* cancel) {
  Status st = lifecycle_.Pause(id, cancel);
  if (!st.ok()) return st.error();
  upstream_->Forget(id);
  const int64_t deadline = NowMillis() + static_cast<int64_t>(config_->ready_timeout_s * 1000);
  for (;;) {
    auto record = lifecycle_.Get(id, cancel);
    if (!record.ok()) return record.error();
    if (record->state == "Paused") return Wrap(std::move(record).value(), cancel);
    if (IsFinalState(record->state)) {
      return MakeError(ErrorCode::kInvalidState, "sandbox " + id + " is " + record->state);
    }
    if (NowMillis() >= deadline) {
      return MakeError(ErrorCode::kTimeout, "sandbox " + id + " did not reach Paused in time");
    }
    if (!cancel->SleepFor(kPollInterval)) return Cancelled("sandbox.pause");
  }
}

Result<Sandbox> Sandboxes::Resume(const std::string& id, CancelToken* cancel) {
  Status st = lifecycle_.Resume(id, cancel);
  if (!st.ok()) return st.error();
  upstream_->Forget(id);
  const int64_t deadline = NowMillis() + static_cast<int64_t>(config_->ready_timeout_s * 1000);
  auto record = lifecycle_.Get(id, cancel);
  if (!record.ok()) return record.error();
  record->id = id;
  Status ready = WaitUntilUsable(*record, deadline, cancel, nullptr);
  if (!ready.ok()) return ready.error();
  return Get(id, cancel);
}

}  // namespace abx::core
