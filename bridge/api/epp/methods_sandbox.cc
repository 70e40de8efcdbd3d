// sandbox.lifecycle, sandbox.timeout, sandbox.pause.

#include "bridge/api/epp/methods.h"
#include "bridge/api/epp/params.h"
#include "bridge/api/epp/session.h"
#include "bridge/api/epp/volume_params.h"
#include "bridge/base/json.h"
#include "bridge/core/bridge_core.h"
#include "bridge/core/sandboxes/sandboxes.h"
#include "bridge/core/sandboxes/warm_pool.h"
#include "common/config_fields.h"

namespace abx::epp {
namespace {

using json::Quote;

constexpr int kMaxListLimit = 200;

std::string SandboxJson(const core::Sandbox& s) {
  const opensandbox::SandboxRecord& r = s.record;
  std::string out = "{\"id\":" + Quote(r.id) + ",\"template\":" + Quote(s.template_name) +
                    ",\"image\":" + Quote(r.image) + ",\"state\":" + Quote(r.state) +
                    ",\"reason\":" + Quote(r.reason) + ",\"message\":" + Quote(r.message) +
                    ",\"created_at\":" + Quote(r.created_at) + ",\"expires_at\":" +
                    (r.expires_at.empty() ? std::string("null") : Quote(r.expires_at)) +
                    ",\"metadata\":" + json::ObjectOfStrings(r.metadata) + "}";
  return out;
}

// provider_options of one create: only the fields a request may set
// (common/config_fields.h, per_request; docs/epp1.md §3), applied over the session's
// configuration with the same validation. Two act per name or per call instead:
// image_aliases adds to the session's aliases, and entrypoint is the call's own (so,
// unlike the configured one, it applies to a code-interpreter image too).
Result<core::ProviderConfig> EffectiveConfig(Request& req, core::CreateSpec* spec, bool* only_ready_timeout) {
  *only_ready_timeout = true;
  const rapidjson::Value* options = Params(req.params()).Raw("provider_options");
  if (!options) return req.session().config();
  if (!options->IsObject()) {
    return InvalidParams("provider_options", "provider_options must be an object");
  }
  auto in_options = [](Error e) {
    e.field = "provider_options." + e.field;
    return e;
  };
  std::map<std::string, std::string> raw = req.session().origin().config;
  std::map<std::string, std::string> aliases;
  for (auto& m : options->GetObject()) {
    const std::string key(m.name.GetString(), m.name.GetStringLength());
    if (key != "ready_timeout") *only_ready_timeout = false;
    if (key == "snapshot_id") {  // a restore (sandbox.snapshot extension), not a configuration field
      if (!m.value.IsString() || m.value.GetStringLength() == 0) {
        return InvalidParams("provider_options.snapshot_id", "provider_options.snapshot_id must be a snapshot id");
      }
      spec->snapshot_id = m.value.GetString();
      continue;
    }
    if (key == "volumes") {  // mounts of this sandbox, not a configuration field
      ABX_ASSIGN_OR_RETURN(spec->volumes, ReadVolumes(m.value));
      continue;
    }
    if (key == "pool_ref") {  // the call's own pool: unlike the configured one, it binds
      if (!m.value.IsString() || m.value.GetStringLength() == 0) {
        return InvalidParams("provider_options.pool_ref", "provider_options.pool_ref must be a pool name");
      }
      spec->pool_ref = m.value.GetString();
      continue;
    }
    const config::Field* field = config::FindField(key);
    if (field == nullptr || !field->per_request) {
      Error refused = MakeError(ErrorCode::kUnsupported, "provider_options." + key + " is not an option a request may set");
      refused.field = key;
      return in_options(std::move(refused));
    }
    const std::string value = m.value.IsString()
                                  ? std::string(m.value.GetString(), m.value.GetStringLength())
                                  : json::ToJson(m.value);
    if (key == "image_aliases") {
      auto parsed = core::ParseImageAliases(key, value);
      if (!parsed.ok()) return in_options(parsed.error());
      aliases = std::move(parsed).value();
    } else if (key == "entrypoint") {
      auto parsed = core::ParseEntrypoint(key, value);
      if (!parsed.ok()) return in_options(parsed.error());
      if (spec->entrypoint.empty()) spec->entrypoint = std::move(parsed).value();
    } else {
      raw[key] = value;
    }
  }
  auto config = core::ParseConfig(raw);
  if (!config.ok()) return in_options(config.error());
  for (auto& [name, image] : aliases) config->image_aliases[name] = image;
  return config;
}

}  // namespace

Result<std::string> SandboxCreate(Request& req) {
  Params p(req.params());
  core::CreateSpec spec;
  ABX_ASSIGN_OR_RETURN(auto entrypoint, p.StringArray("entrypoint"));
  if (entrypoint) {
    if (entrypoint->empty()) return InvalidParams("entrypoint", "entrypoint must not be empty");
    spec.entrypoint = *entrypoint;
  }
  bool only_ready_timeout = true;
  ABX_ASSIGN_OR_RETURN(core::ProviderConfig config, EffectiveConfig(req, &spec, &only_ready_timeout));
  ABX_ASSIGN_OR_RETURN(auto template_name, p.String("template"));
  if (template_name && !spec.snapshot_id.empty()) {
    return InvalidParams("template", "template and provider_options.snapshot_id are two sources: give one");
  }
  // `base` is the host's default template, which a host may always send: with pool_ref it
  // names nothing more, as for the configured pool_ref.
  if (!spec.pool_ref.empty() && ((template_name && *template_name != "base") || !spec.snapshot_id.empty())) {
    return InvalidParams("provider_options.pool_ref",
                         "provider_options.pool_ref is a source of its own: give no template (other than base) "
                         "or snapshot_id with it");
  }
  spec.template_name = template_name.value_or("base");
  ABX_ASSIGN_OR_RETURN(auto timeout, p.Int("timeout"));
  if (timeout && *timeout < 0) return InvalidParams("timeout", "timeout must not be negative");
  spec.timeout_s = timeout;
  ABX_ASSIGN_OR_RETURN(auto env, p.StringMap("env"));
  if (env) spec.env = *env;
  ABX_ASSIGN_OR_RETURN(auto metadata, p.StringMap("metadata"));
  if (metadata) spec.metadata = *metadata;
  if (const rapidjson::Value* resources = p.Raw("resources")) {
    if (!resources->IsObject()) return InvalidParams("resources", "resources must be an object");
    for (auto& m : resources->GetObject()) {
      const std::string key = m.name.GetString();
      if (key != "cpu" && key != "memory") {
        return MakeError(ErrorCode::kUnsupported, "resources." + key + " is not supported");
      }
      std::string value = m.value.IsString() ? m.value.GetString()
                          : m.value.IsNumber() ? json::ToJson(m.value)
                                               : "";
      if (value.empty()) return InvalidParams("resources." + key, "resources." + key + " must be a string or a number");
      (key == "cpu" ? spec.cpu : spec.memory) = value;
    }
  }
  ABX_ASSIGN_OR_RETURN(auto secure, p.Bool("secure"));
  spec.secure = secure;

  auto upstream = req.session().core().EndpointCacheFor(config);
  core::Sandboxes sandboxes(upstream.get(), &config);
  if (!spec.volumes.empty() && !sandboxes.PoolRefOf(spec).empty()) {
    return InvalidParams("provider_options.volumes",
                         "provider_options.volumes cannot be mounted into a sandbox from a pool (pool_ref): its "
                         "pods were made before the request");
  }
  // The daemon's warm pool first (docs/epp1.md §3, "sandbox.pool"): a matching call
  // takes a sandbox that is Running already; without one it creates as usual.
  if (core::CreateMayTakePooled(spec, config, only_ready_timeout)) {
    if (auto pooled = WarmPoolOf(req.session().core()).Take(config, spec, &req.cancel())) {
      std::string json = SandboxJson(*pooled);
      json.insert(json.size() - 1, ",\"pooled\":true");
      return json;
    }
    if (req.cancel().cancelled()) return MakeError(ErrorCode::kCancelled, "sandbox.create was cancelled");
  }
  const std::string id_json = req.id_json();
  auto sandbox = sandboxes.Create(spec, &req.cancel(), [&](const std::string& state,
                                                           const std::string& message) {
    req.Notify("$/progress", "{\"id\":" + id_json + ",\"state\":" + Quote(state) +
                                 ",\"message\":" + Quote(message) + "}");
  });
  if (!sandbox.ok()) return sandbox.error();
  return SandboxJson(*sandbox);
}

Result<std::string> SandboxConnect(Request& req) {
  ABX_ASSIGN_OR_RETURN(std::string id, SandboxId(Params(req.params())));
  core::Sandboxes sandboxes(req.session().upstream().get(), &req.session().config());
  ABX_ASSIGN_OR_RETURN(core::Sandbox sandbox, sandboxes.Connect(id, &req.cancel()));
  return SandboxJson(sandbox);
}

Result<std::string> SandboxGet(Request& req) {
  ABX_ASSIGN_OR_RETURN(std::string id, SandboxId(Params(req.params())));
  core::Sandboxes sandboxes(req.session().upstream().get(), &req.session().config());
  ABX_ASSIGN_OR_RETURN(core::Sandbox sandbox, sandboxes.Get(id, &req.cancel()));
  return SandboxJson(sandbox);
}

Result<std::string> SandboxList(Request& req) {
  Params p(req.params());
  ABX_ASSIGN_OR_RETURN(auto states, p.StringArray("state"));
  ABX_ASSIGN_OR_RETURN(auto metadata, p.StringMap("metadata"));
  ABX_ASSIGN_OR_RETURN(auto limit, p.Int("limit"));
  ABX_ASSIGN_OR_RETURN(auto cursor, p.String("cursor"));
  if (limit && (*limit < 1 || *limit > kMaxListLimit)) {
    return InvalidParams("limit", "limit must be between 1 and 200");
  }
  core::Sandboxes sandboxes(req.session().upstream().get(), &req.session().config());
  ABX_ASSIGN_OR_RETURN(
      core::SandboxList list,
      sandboxes.List(states.value_or(std::vector<std::string>{}),
                     metadata.value_or(std::map<std::string, std::string>{}),
                     static_cast<int>(limit.value_or(0)), cursor.value_or(""), &req.cancel()));
  std::string out = "{\"sandboxes\":[";
  for (size_t i = 0; i < list.sandboxes.size(); ++i) {
    if (i) out += ",";
    out += SandboxJson(list.sandboxes[i]);
  }
  out += "],\"next_cursor\":" + (list.next_cursor ? Quote(*list.next_cursor) : std::string("null")) + "}";
  return out;
}

Result<std::string> SandboxKill(Request& req) {
  ABX_ASSIGN_OR_RETURN(std::string id, SandboxId(Params(req.params())));
  core::Sandboxes sandboxes(req.session().upstream().get(), &req.session().config());
  ABX_ASSIGN_OR_RETURN(bool killed, sandboxes.Kill(id, &req.cancel()));
  return std::string(killed ? "{\"killed\":true}" : "{\"killed\":false}");
}

Result<std::string> SandboxSetTimeout(Request& req) {
  Params p(req.params());
  ABX_ASSIGN_OR_RETURN(std::string id, SandboxId(p));
  ABX_ASSIGN_OR_RETURN(auto timeout, p.Int("timeout"));
  if (!timeout || *timeout <= 0) {
    return InvalidParams("timeout", "timeout (seconds from now) is required and positive");
  }
  core::Sandboxes sandboxes(req.session().upstream().get(), &req.session().config());
  ABX_ASSIGN_OR_RETURN(std::string expires, sandboxes.SetTimeout(id, *timeout, &req.cancel()));
  return "{\"expires_at\":" + Quote(expires) + "}";
}

Result<std::string> SandboxSetMetadata(Request& req) {
  Params p(req.params());
  ABX_ASSIGN_OR_RETURN(std::string id, SandboxId(p));
  const rapidjson::Value* metadata = p.Raw("metadata");
  if (!metadata || !metadata->IsObject()) {
    return InvalidParams("metadata", "metadata is required: an object of string or null values");
  }
  core::Sandboxes::MetadataPatch patch;
  for (auto& m : metadata->GetObject()) {
    const std::string key(m.name.GetString(), m.name.GetStringLength());
    if (m.value.IsNull()) {
      patch.emplace_back(key, std::nullopt);
    } else if (m.value.IsString()) {
      patch.emplace_back(key, std::string(m.value.GetString(), m.value.GetStringLength()));
    } else {
      return InvalidParams("metadata." + key, "metadata." + key + " must be a string, or null to delete it");
    }
  }
  core::Sandboxes sandboxes(req.session().upstream().get(), &req.session().config());
  ABX_ASSIGN_OR_RETURN(core::Sandbox sandbox, sandboxes.SetMetadata(id, patch, &req.cancel()));
  return SandboxJson(sandbox);
}

Result<std::string> SandboxPause(Request& req) {
  ABX_ASSIGN_OR_RETURN(std::string id, SandboxId(Params(req.params())));
  core::Sandboxes sandboxes(req.session().upstream().get(), &req.session().config());
  ABX_ASSIGN_OR_RETURN(core::Sandbox sandbox, sandboxes.Pause(id, &req.cancel()));
  return SandboxJson(sandbox);
}

Result<std::string> SandboxResume(Request& req) {
  ABX_ASSIGN_OR_RETURN(std::string id, SandboxId(Params(req.params())));
  core::Sandboxes sandboxes(req.session().upstream().get(), &req.session().config());
  ABX_ASSIGN_OR_RETURN(core::Sandbox sandbox, sandboxes.Resume(id, &req.cancel()));
  return SandboxJson(sandbox);
}

}  // namespace abx::epp
