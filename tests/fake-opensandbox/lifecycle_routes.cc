// The lifecycle API (docs/opensandbox.md §1.3–1.10): sandboxes CRUD, pause/resume, renew, metadata,
// /health; endpoint_route.cc has the endpoints, snapshot_routes.cc the snapshots.

#include <algorithm>
#include <cctype>
#include <cmath>
#include <regex>

#include "common/percent_encoding.h"
#include "rapidjson/document.h"
#include "tests/fake-opensandbox/create_request.h"
#include "tests/fake-opensandbox/lifecycle_context.h"
#include "tests/fake-opensandbox/lifecycle_errors.h"
#include "tests/fake-opensandbox/lifecycle_json.h"
#include "tests/fake-opensandbox/metadata_labels.h"
#include "tests/fake-opensandbox/query_params.h"

namespace fake_opensandbox {
namespace {

using Loc = ValidationErrors::Loc;

// Python's parse_qsl(text, keep_blank_values=True, strict_parsing=True).
bool ParseMetadataFilter(const std::string& text, StringPairs* out, std::string* error) {
  size_t start = 0;
  while (start <= text.size()) {
    size_t amp = text.find('&', start);
    if (amp == std::string::npos) amp = text.size();
    std::string segment = text.substr(start, amp - start);
    size_t eq = segment.find('=');
    if (eq == std::string::npos) {
      *error = "bad query field: '" + segment + "'";
      return false;
    }
    out->emplace_back(abx::PercentDecodeLenient(segment.substr(0, eq), /*plus_is_space=*/true),
                      abx::PercentDecodeLenient(segment.substr(eq + 1), /*plus_is_space=*/true));
    start = amp + 1;
  }
  return true;
}

void HandleCreate(const httplib::Request& req, httplib::Response& res, LifecycleContext* ctx) {
  CreateSpec spec;
  Rejection rejection;
  if (!ParseCreateRequest(req.body, ctx->config, &spec, &rejection)) {
    SendJson(res, rejection.status, rejection.body);
    return;
  }
  // The snapshot is looked up after the request's own checks (the service's restore).
  std::optional<SnapshotSource> from;
  if (spec.snapshot_id) {
    std::string state;
    from = ctx->snapshots->SourceOf(*spec.snapshot_id, &state);
    if (!from) {
      return SendCodeMessage(res, 404, "SNAPSHOT::NOT_FOUND", "Snapshot " + *spec.snapshot_id + " not found.");
    }
    if (state != "Ready") {
      return SendCodeMessage(res, 409, "SNAPSHOT::INVALID_STATE",
                             "Snapshot " + *spec.snapshot_id + " is not ready (state " + state + ").");
    }
  }
  // The service's volume checks come after the restore's lookup (docker_service.py).
  if (auto refused = CheckVolumes(spec.volumes, ctx->config.allowed_host_paths)) {
    return SendCodeMessage(res, refused->status, refused->code, refused->message);
  }
  if (ctx->faults->Get().refuse_creates) {
    return SendCodeMessage(res, 500, RuntimeNamespace(*ctx) + "SANDBOX_START_FAILED",
                           "Failed to start sandbox: quota exceeded (fault refuse_creates)");
  }
  SandboxInfo created;
  std::string error;
  std::optional<VolumeRefusal> refused;
  if (!ctx->registry->Create(spec, from ? &*from : nullptr, &created, &refused, &error)) {
    if (refused) return SendCodeMessage(res, refused->status, refused->code, refused->message);
    SendCodeMessage(res, 500, RuntimeNamespace(*ctx) + "SANDBOX_START_FAILED",
                    "Failed to start sandbox: " + error);
    return;
  }
  SendJson(res, 202, CreateResponseJson(created, spec));
}

void HandleList(const httplib::Request& req, httplib::Response& res, LifecycleContext* ctx) {
  ValidationErrors errors;
  Paging paging;
  ParsePaging(req, &paging, &errors);
  if (!errors.empty()) {
    SendJson(res, 422, errors.ToJson());
    return;
  }
  StringPairs metadata_filter;
  std::string metadata = req.get_param_value("metadata");
  if (!metadata.empty()) {
    std::string error;
    if (!ParseMetadataFilter(metadata, &metadata_filter, &error)) {
      SendCodeMessage(res, 400, "INVALID_METADATA_FORMAT", "Invalid metadata format: " + error);
      return;
    }
  }
  std::vector<std::string> states;
  for (size_t i = 0; i < req.get_param_value_count("state"); ++i) {
    states.push_back(Lower(req.get_param_value("state", i)));
  }
  std::vector<SandboxInfo> matching;
  for (auto& info : ctx->registry->List()) {
    if (!states.empty() &&
        std::find(states.begin(), states.end(), Lower(info.state)) == states.end()) {
      continue;
    }
    bool all = true;
    for (const auto& [key, value] : metadata_filter) {
      auto it = std::find_if(info.metadata.begin(), info.metadata.end(),
                             [&](const auto& kv) { return kv.first == key; });
      all = all && it != info.metadata.end() && it->second == value;
    }
    if (all) matching.push_back(std::move(info));
  }
  std::sort(matching.begin(), matching.end(), [](const SandboxInfo& a, const SandboxInfo& b) {
    if (a.created_at != b.created_at) return a.created_at > b.created_at;
    return a.sequence > b.sequence;
  });
  rapidjson::StringBuffer buffer;
  JsonWriter w(buffer);
  WritePage(w, paging, matching.size(), [&](size_t i) { WriteSandbox(w, matching[i]); });
  SendJson(res, 200, buffer.GetString());
}

void HandleGet(const httplib::Request& req, httplib::Response& res, LifecycleContext* ctx) {
  std::string id = req.matches[1];
  auto info = ctx->registry->Get(id, /*count_poll=*/true);
  if (!info) return SendSandboxNotFound(res, *ctx, id);
  SendJson(res, 200, SandboxJson(*info));
}

void HandleDelete(const httplib::Request& req, httplib::Response& res, LifecycleContext* ctx) {
  std::string id = req.matches[1];
  if (!ctx->registry->Delete(id)) return SendSandboxNotFound(res, *ctx, id);
  res.status = 204;
}

void HandlePause(const httplib::Request& req, httplib::Response& res, LifecycleContext* ctx) {
  std::string id = req.matches[1];
  const bool docker = ctx->config.runtime == Runtime::kDocker;
  switch (ctx->registry->Pause(id)) {
    case SandboxRegistry::OpResult::kOk:
      res.status = 202;
      return;
    case SandboxRegistry::OpResult::kNotFound:
      return SendSandboxNotFound(res, *ctx, id);
    case SandboxRegistry::OpResult::kWrongState:
      if (docker) {
        return SendCodeMessage(res, 409, "DOCKER::SANDBOX_NOT_RUNNING",
                               "Sandbox " + id + " is not running and cannot be paused.");
      }
      return SendCodeMessage(res, 409, "KUBERNETES::INVALID_STATE",
                             "Sandbox '" + id + "' cannot be paused in its current state.");
    case SandboxRegistry::OpResult::kFailed:
      return SendCodeMessage(res, 500, "DOCKER::SANDBOX_PAUSE_FAILED",
                             "Failed to pause sandbox " + id + ": container is already paused");
  }
}

void HandleResume(const httplib::Request& req, httplib::Response& res, LifecycleContext* ctx) {
  std::string id = req.matches[1];
  switch (ctx->registry->Resume(id)) {
    case SandboxRegistry::OpResult::kOk:
      res.status = 202;
      return;
    case SandboxRegistry::OpResult::kNotFound:
      return SendSandboxNotFound(res, *ctx, id);
    default:
      if (ctx->config.runtime == Runtime::kDocker) {
        return SendCodeMessage(res, 409, "DOCKER::SANDBOX_NOT_PAUSED",
                               "Sandbox " + id + " is not paused and cannot be resumed.");
      }
      return SendCodeMessage(res, 409, "KUBERNETES::INVALID_STATE",
                             "Sandbox '" + id + "' can only be resumed from Paused.");
  }
}

void HandleRenew(const httplib::Request& req, httplib::Response& res, LifecycleContext* ctx) {
  std::string id = req.matches[1];
  ValidationErrors errors;
  const Loc body_loc = {std::string("body")};
  rapidjson::Document doc;
  std::optional<TimePoint> expires_at;
  if (req.body.empty()) {
    errors.Add("missing", body_loc, "Field required", nullptr);
  } else if (doc.Parse(req.body.c_str(), req.body.size()).HasParseError()) {
    rapidjson::Value empty(rapidjson::kObjectType);
    errors.Add("json_invalid", {std::string("body"), static_cast<int>(doc.GetErrorOffset())},
               "JSON decode error", &empty, "{\"error\":\"Expecting value\"}");
  } else if (!doc.IsObject()) {
    errors.Add("model_attributes_type", body_loc,
               "Input should be a valid dictionary or object to extract fields from", &doc);
  } else {
    auto it = doc.FindMember("expiresAt");
    Loc loc = {std::string("body"), std::string("expiresAt")};
    if (it == doc.MemberEnd()) {
      errors.Add("missing", loc, "Field required", &doc);
    } else if (it->value.IsNumber()) {
      double seconds = it->value.GetDouble();
      if (std::fabs(seconds) > 2e10) seconds /= 1000.0;
      seconds = std::max(-9e9, std::min(9e9, seconds));  // within system_clock's range
      expires_at = TimePoint(std::chrono::duration_cast<TimePoint::duration>(
          std::chrono::duration<double>(seconds)));
    } else if (it->value.IsString()) {
      expires_at = ParseDateTime(it->value.GetString());
      if (!expires_at) {
        errors.Add("datetime_from_date_parsing", loc,
                   "Input should be a valid datetime or date, invalid datetime format", &it->value,
                   "{\"error\":\"invalid datetime format\"}");
      }
    } else {
      errors.Add("datetime_type", loc, "Input should be a valid datetime", &it->value);
    }
  }
  if (!errors.empty()) return SendJson(res, 422, errors.ToJson());

  const bool docker = ctx->config.runtime == Runtime::kDocker;
  const std::string ns = RuntimeNamespace(*ctx);
  TimePoint now = ctx->clock.Now();
  bool in_past = *expires_at <= now;
  // Kubernetes checks the time before looking the sandbox up; Docker after.
  if (!docker && in_past) {
    return SendCodeMessage(res, 400, ns + "INVALID_EXPIRATION",
                           "New expiration time must be in the future.");
  }
  if (!ctx->registry->Get(id, /*count_poll=*/false)) return SendSandboxNotFound(res, *ctx, id);
  if (in_past) {
    return SendCodeMessage(res, 400, ns + "INVALID_EXPIRATION",
                           "New expiration time must be in the future.");
  }
  if (*expires_at - now > std::chrono::seconds(ctx->config.max_timeout_s)) {
    return SendCodeMessage(res, 400, "SANDBOX::INVALID_PARAMETER",
                           "New expiration exceeds the maximum sandbox timeout of " +
                               std::to_string(ctx->config.max_timeout_s) + " seconds.");
  }
  switch (ctx->registry->Renew(id, *expires_at)) {
    case SandboxRegistry::OpResult::kOk:
      break;
    case SandboxRegistry::OpResult::kWrongState:
      return SendCodeMessage(res, 409, ns + "INVALID_EXPIRATION",
                             "Sandbox " + id + " does not have automatic expiration enabled.");
    default:
      return SendSandboxNotFound(res, *ctx, id);
  }
  rapidjson::StringBuffer buffer;
  JsonWriter w(buffer);
  w.StartObject();
  w.Key("expiresAt");
  WriteString(w, FormatPydanticTime(*expires_at));
  w.EndObject();
  SendJson(res, 200, buffer.GetString());
}

void HandlePatchMetadata(const httplib::Request& req, httplib::Response& res,
                         LifecycleContext* ctx) {
  std::string id = req.matches[1];
  ValidationErrors errors;
  rapidjson::Document doc;
  std::vector<std::pair<std::string, std::optional<std::string>>> patch;
  if (req.body.empty()) {
    errors.Add("missing", {std::string("body")}, "Field required", nullptr);
  } else if (doc.Parse(req.body.c_str(), req.body.size()).HasParseError()) {
    rapidjson::Value empty(rapidjson::kObjectType);
    errors.Add("json_invalid", {std::string("body"), static_cast<int>(doc.GetErrorOffset())},
               "JSON decode error", &empty, "{\"error\":\"Expecting value\"}");
  } else if (!doc.IsObject()) {
    errors.Add("dict_type", {std::string("body")}, "Input should be a valid dictionary", &doc);
  } else {
    for (auto it = doc.MemberBegin(); it != doc.MemberEnd(); ++it) {
      std::string key = it->name.GetString();
      if (it->value.IsNull()) {
        patch.emplace_back(key, std::nullopt);
      } else if (it->value.IsString()) {
        patch.emplace_back(key, std::string(it->value.GetString()));
      } else {
        errors.Add("string_type", {std::string("body"), key}, "Input should be a valid string",
                   &it->value);
      }
    }
  }
  if (!errors.empty()) return SendJson(res, 422, errors.ToJson());
  if (!ctx->registry->Get(id, false)) return SendSandboxNotFound(res, *ctx, id);
  for (const auto& [key, value] : patch) {
    if (IsReservedLabelKey(key)) {
      return SendCodeMessage(res, 400, "INVALID_METADATA_LABEL",
                             "Metadata key '" + key + "' uses the reserved prefix '" +
                                 kReservedLabelPrefix + "'.");
    }
    std::string problem = CheckLabelKey(key);
    if (problem.empty() && value) problem = CheckLabelValue(*value);
    if (!problem.empty()) {
      return SendCodeMessage(res, 400, "SANDBOX::INVALID_METADATA_LABEL",
                             "Invalid metadata label '" + key + "': " + problem + ".");
    }
  }
  auto info = ctx->registry->PatchMetadata(id, patch);
  if (!info) return SendSandboxNotFound(res, *ctx, id);
  SendJson(res, 200, SandboxJson(*info));
}

}  // namespace

void RegisterLifecycleRoutes(httplib::Server& server, LifecycleContext* ctx) {
  const std::string v1 = kV1Prefix;
  auto bind = [ctx](void (*handler)(const httplib::Request&, httplib::Response&,
                                    LifecycleContext*)) {
    return [ctx, handler](const httplib::Request& req, httplib::Response& res) {
      handler(req, res, ctx);
    };
  };
  server.Get("/health", [](const httplib::Request&, httplib::Response& res) {
    SendJson(res, 200, "{\"status\":\"healthy\"}");
  });
  server.Post(v1 + "/sandboxes", bind(HandleCreate));
  server.Get(v1 + "/sandboxes", bind(HandleList));
  server.Get(v1 + "/sandboxes/([^/]+)", bind(HandleGet));
  server.Delete(v1 + "/sandboxes/([^/]+)", bind(HandleDelete));
  server.Post(v1 + "/sandboxes/([^/]+)/pause", bind(HandlePause));
  server.Post(v1 + "/sandboxes/([^/]+)/resume", bind(HandleResume));
  server.Post(v1 + "/sandboxes/([^/]+)/renew-expiration", bind(HandleRenew));
  server.Patch(v1 + "/sandboxes/([^/]+)/metadata", bind(HandlePatchMetadata));
  RegisterEndpointRoute(server, ctx);
  RegisterSnapshotRoutes(server, ctx);
}

}  // namespace fake_opensandbox
