#include "bridge/api/grpc/sandboxes_service.h"

#include <map>
#include <string>
#include <vector>

#include "bridge/api/grpc/pool_state_proto.h"
#include "bridge/base/time_util.h"
#include "bridge/core/sandboxes/metrics.h"
#include "bridge/core/sandboxes/sandboxes.h"
#include "bridge/core/sandboxes/warm_pool.h"

namespace abx::api {
namespace {

namespace pb = abx::opensandbox::v1;

// The same bound as EPP/1's sandbox.list.
constexpr int kMaxListLimit = 200;

void ToProto(const core::Sandbox& sandbox, pb::Sandbox* out) {
  const opensandbox::SandboxRecord& r = sandbox.record;
  out->set_id(r.id);
  out->set_template_(sandbox.template_name);
  out->set_image(r.image);
  out->set_state(r.state);
  out->set_reason(r.reason);
  out->set_message(r.message);
  out->set_created_at(r.created_at);
  out->set_expires_at(r.expires_at);
  out->mutable_metadata()->insert(r.metadata.begin(), r.metadata.end());
  for (const std::string& word : r.entrypoint) out->add_entrypoint(word);
}

template <typename Map>
std::map<std::string, std::string> ToStdMap(const Map& map) {
  return std::map<std::string, std::string>(map.begin(), map.end());
}

core::Volume FromProto(const pb::Volume& v) {
  core::Volume volume;
  volume.name = v.name();
  volume.mount_path = v.mount_path();
  if (v.read_only()) volume.read_only = true;
  volume.sub_path = v.sub_path();
  auto optional_text = [](const std::string& s) { return s.empty() ? std::nullopt : std::optional<std::string>(s); };
  switch (v.backend_case()) {
    case pb::Volume::kHost:
      volume.host = core::Volume::Host{v.host().path()};
      break;
    case pb::Volume::kPvc: {
      const pb::PvcVolume& p = v.pvc();
      core::Volume::Pvc pvc;
      pvc.claim_name = p.claim_name();
      if (p.has_create_if_not_exists()) pvc.create_if_not_exists = p.create_if_not_exists();
      if (p.has_delete_on_sandbox_termination()) pvc.delete_on_sandbox_termination = p.delete_on_sandbox_termination();
      pvc.storage_class = optional_text(p.storage_class());
      pvc.storage = optional_text(p.storage());
      if (p.access_modes_size() > 0) pvc.access_modes.emplace(p.access_modes().begin(), p.access_modes().end());
      volume.pvc = std::move(pvc);
      break;
    }
    case pb::Volume::kOssfs: {
      const pb::OssfsVolume& o = v.ossfs();
      core::Volume::Ossfs oss;
      oss.bucket = o.bucket();
      oss.endpoint = o.endpoint();
      oss.access_key_id = o.access_key_id();
      oss.access_key_secret = o.access_key_secret();
      oss.version = optional_text(o.version());
      if (o.options_size() > 0) oss.options.emplace(o.options().begin(), o.options().end());
      volume.ossfs = std::move(oss);
      break;
    }
    case pb::Volume::BACKEND_NOT_SET:
      break;  // CheckVolumes names it
  }
  return volume;
}

Result<core::CreateSpec> ReadCreateSpec(const pb::CreateSandboxRequest& request) {
  core::CreateSpec spec;
  spec.template_name = request.template_().empty() ? "base" : request.template_();
  if (request.has_timeout_seconds()) {
    if (request.timeout_seconds() < 0) {
      return InvalidParams("timeout_seconds", "timeout_seconds must not be negative");
    }
    spec.timeout_s = request.timeout_seconds();
  }
  spec.env = ToStdMap(request.env());
  spec.metadata = ToStdMap(request.metadata());
  spec.cpu = request.resources().cpu();
  spec.memory = request.resources().memory();
  spec.entrypoint.assign(request.entrypoint().begin(), request.entrypoint().end());
  for (const std::string& word : spec.entrypoint) {
    if (word.find('\0') != std::string::npos) {
      return InvalidParams("entrypoint", "entrypoint words cannot hold NUL characters");
    }
  }
  if (request.has_secure()) spec.secure = request.secure();
  if (!request.snapshot_id().empty()) {
    if (!request.template_().empty()) {
      return InvalidParams("template", "template and snapshot_id are two sources: give one");
    }
    spec.snapshot_id = request.snapshot_id();
  }
  for (const pb::Volume& v : request.volumes()) spec.volumes.push_back(FromProto(v));
  if (Status checked = core::CheckVolumes(spec.volumes); !checked.ok()) return checked.error();
  if (!request.pool_ref().empty()) {
    if ((!request.template_().empty() && request.template_() != "base") || !request.snapshot_id().empty()) {
      return InvalidParams("pool_ref",
                           "pool_ref is a source of its own: give no template (other than base) or snapshot_id with it");
    }
    spec.pool_ref = request.pool_ref();
  }
  return spec;
}

}  // namespace

grpc::ServerUnaryReactor* SandboxesService::Create(grpc::CallbackServerContext* context,
                                      const pb::CreateSandboxRequest* request, pb::Sandbox* reply) {
  return Serve(
      deps_, context, "Sandboxes.Create", request->config(), [=](TypedCall& call) -> Status {
        ABX_ASSIGN_OR_RETURN(core::CreateSpec spec, ReadCreateSpec(*request));
        // The daemon's warm pool first, as sandbox.create (docs/epp1.md §3).
        if (core::CreateMayTakePooled(spec, call.config(), /*only_ready_timeout_options=*/true)) {
          if (auto pooled = WarmPoolOf(*call.core()).Take(call.config(), spec, call.cancel())) {
            ToProto(*pooled, reply);
            reply->set_pooled(true);
            return OkStatus();
          }
          if (call.cancel()->cancelled()) return MakeError(ErrorCode::kCancelled, "Sandboxes.Create was cancelled");
        }
        core::Sandboxes sandboxes(call.upstream(), &call.config());
        // Killed by Create itself on failure, timeout or cancellation.
        ABX_ASSIGN_OR_RETURN(core::Sandbox sandbox, sandboxes.Create(spec, call.cancel(), {}));
        ToProto(sandbox, reply);
        return OkStatus();
      });
}

grpc::ServerUnaryReactor* SandboxesService::Connect(grpc::CallbackServerContext* context,
                                       const pb::ConnectSandboxRequest* request,
                                       pb::Sandbox* reply) {
  return Serve(
      deps_, context, "Sandboxes.Connect", request->config(), [=](TypedCall& call) -> Status {
        ABX_ASSIGN_OR_RETURN(std::string id, Required(request->sandbox_id(), "sandbox_id"));
        core::Sandboxes sandboxes(call.upstream(), &call.config());
        ABX_ASSIGN_OR_RETURN(core::Sandbox sandbox, sandboxes.Connect(id, call.cancel()));
        ToProto(sandbox, reply);
        return OkStatus();
      });
}

grpc::ServerUnaryReactor* SandboxesService::Get(grpc::CallbackServerContext* context,
                                   const pb::GetSandboxRequest* request, pb::Sandbox* reply) {
  return Serve(
      deps_, context, "Sandboxes.Get", request->config(), [=](TypedCall& call) -> Status {
        ABX_ASSIGN_OR_RETURN(std::string id, Required(request->sandbox_id(), "sandbox_id"));
        core::Sandboxes sandboxes(call.upstream(), &call.config());
        ABX_ASSIGN_OR_RETURN(core::Sandbox sandbox, sandboxes.Get(id, call.cancel()));
        ToProto(sandbox, reply);
        return OkStatus();
      });
}

grpc::ServerUnaryReactor* SandboxesService::List(grpc::CallbackServerContext* context,
                                    const pb::ListSandboxesRequest* request,
                                    pb::ListSandboxesReply* reply) {
  return Serve(
      deps_, context, "Sandboxes.List", request->config(), [=](TypedCall& call) -> Status {
        if (request->limit() < 0 || request->limit() > kMaxListLimit) {
          return InvalidParams("limit", "limit must be between 1 and 200 (0: all)");
        }
        const std::vector<std::string> states(request->states().begin(), request->states().end());
        core::Sandboxes sandboxes(call.upstream(), &call.config());
        ABX_ASSIGN_OR_RETURN(core::SandboxList list,
                             sandboxes.List(states, ToStdMap(request->metadata()), request->limit(),
                                            request->cursor(), call.cancel()));
        for (const core::Sandbox& sandbox : list.sandboxes) {
          ToProto(sandbox, reply->add_sandboxes());
        }
        reply->set_next_cursor(list.next_cursor.value_or(""));
        return OkStatus();
      });
}

grpc::ServerUnaryReactor* SandboxesService::Kill(grpc::CallbackServerContext* context,
                                    const pb::KillSandboxRequest* request,
                                    pb::KillSandboxReply* reply) {
  return Serve(
      deps_, context, "Sandboxes.Kill", request->config(), [=](TypedCall& call) -> Status {
        ABX_ASSIGN_OR_RETURN(std::string id, Required(request->sandbox_id(), "sandbox_id"));
        core::Sandboxes sandboxes(call.upstream(), &call.config());
        ABX_ASSIGN_OR_RETURN(bool killed, sandboxes.Kill(id, call.cancel()));
        reply->set_killed(killed);
        return OkStatus();
      });
}

grpc::ServerUnaryReactor* SandboxesService::SetTimeout(grpc::CallbackServerContext* context,
                                          const pb::SetSandboxTimeoutRequest* request,
                                          pb::SetSandboxTimeoutReply* reply) {
  return Serve(
      deps_, context, "Sandboxes.SetTimeout", request->config(),
      [=](TypedCall& call) -> Status {
        ABX_ASSIGN_OR_RETURN(std::string id, Required(request->sandbox_id(), "sandbox_id"));
        if (request->timeout_seconds() <= 0) {
          return InvalidParams("timeout_seconds",
                                     "timeout_seconds (from now) is required and positive");
        }
        core::Sandboxes sandboxes(call.upstream(), &call.config());
        ABX_ASSIGN_OR_RETURN(std::string expires_at,
                             sandboxes.SetTimeout(id, request->timeout_seconds(), call.cancel()));
        reply->set_expires_at(expires_at);
        return OkStatus();
      });
}

grpc::ServerUnaryReactor* SandboxesService::Pause(grpc::CallbackServerContext* context,
                                     const pb::PauseSandboxRequest* request, pb::Sandbox* reply) {
  return Serve(
      deps_, context, "Sandboxes.Pause", request->config(), [=](TypedCall& call) -> Status {
        ABX_ASSIGN_OR_RETURN(std::string id, Required(request->sandbox_id(), "sandbox_id"));
        core::Sandboxes sandboxes(call.upstream(), &call.config());
        ABX_ASSIGN_OR_RETURN(core::Sandbox sandbox, sandboxes.Pause(id, call.cancel()));
        ToProto(sandbox, reply);
        return OkStatus();
      });
}

grpc::ServerUnaryReactor* SandboxesService::Resume(grpc::CallbackServerContext* context,
                                      const pb::ResumeSandboxRequest* request, pb::Sandbox* reply) {
  return Serve(
      deps_, context, "Sandboxes.Resume", request->config(), [=](TypedCall& call) -> Status {
        ABX_ASSIGN_OR_RETURN(std::string id, Required(request->sandbox_id(), "sandbox_id"));
        core::Sandboxes sandboxes(call.upstream(), &call.config());
        ABX_ASSIGN_OR_RETURN(core::Sandbox sandbox, sandboxes.Resume(id, call.cancel()));
        ToProto(sandbox, reply);
        return OkStatus();
      });
}

grpc::ServerUnaryReactor* SandboxesService::GetMetrics(grpc::CallbackServerContext* context,
                                                       const pb::GetSandboxMetricsRequest* request,
                                                       pb::SandboxMetrics* reply) {
  return Serve(
      deps_, context, "Sandboxes.GetMetrics", request->config(), [=](TypedCall& call) -> Status {
        ABX_ASSIGN_OR_RETURN(std::string id, Required(request->sandbox_id(), "sandbox_id"));
        core::Metrics metrics(call.upstream(), &call.config());
        ABX_ASSIGN_OR_RETURN(opensandbox::SandboxMetrics sample, metrics.Sample(id, call.cancel()));
        reply->set_cpu_count(sample.cpu_count);
        reply->set_cpu_used_pct(sample.cpu_used_pct);
        reply->set_mem_total_mib(sample.mem_total_mib);
        reply->set_mem_used_mib(sample.mem_used_mib);
        reply->set_at(FormatRfc3339Millis(sample.timestamp_ms));
        return OkStatus();
      });
}

grpc::ServerUnaryReactor* SandboxesService::SetMetadata(grpc::CallbackServerContext* context,
                                                        const pb::SetSandboxMetadataRequest* request,
                                                        pb::Sandbox* reply) {
  return Serve(
      deps_, context, "Sandboxes.SetMetadata", request->config(), [=](TypedCall& call) -> Status {
        ABX_ASSIGN_OR_RETURN(std::string id, Required(request->sandbox_id(), "sandbox_id"));
        core::Sandboxes::MetadataPatch patch;
        for (const auto& [key, value] : ToStdMap(request->set())) patch.emplace_back(key, value);
        for (const std::string& key : request->remove()) {
          if (request->set().count(key)) {
            return InvalidParams("metadata." + key, "metadata key " + key + " is both set and removed");
          }
          patch.emplace_back(key, std::nullopt);
        }
        core::Sandboxes sandboxes(call.upstream(), &call.config());
        ABX_ASSIGN_OR_RETURN(core::Sandbox sandbox, sandboxes.SetMetadata(id, patch, call.cancel()));
        ToProto(sandbox, reply);
        return OkStatus();
      });
}

grpc::ServerUnaryReactor* SandboxesService::PoolStatus(grpc::CallbackServerContext* context,
                                                       const pb::PoolStatusRequest* request,
                                                       pb::PoolStatusReply* reply) {
  return Serve(deps_, context, "Sandboxes.PoolStatus", request->config(), [=](TypedCall& call) -> Status {
    const std::string scope = call.config().CredentialScope();
    for (const auto& pool : WarmPoolOf(*call.core()).AllStates()) {
      if (pool.scope == scope) ToProto(*call.core(), pool, reply->add_pools());
    }
    return OkStatus();
  });
}

}  // namespace abx::api
