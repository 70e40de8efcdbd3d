// The snapshot routes (docs/opensandbox.md §1.11): create from a Running sandbox (202 with
// a Location, the capture in the background), list with the sandboxId and state filters
// and the lifecycle's pagination, get, delete. A restore is POST /sandboxes with
// snapshotId (lifecycle_routes.cc).

#include <algorithm>

#include "rapidjson/document.h"
#include "tests/fake-opensandbox/lifecycle_context.h"
#include "tests/fake-opensandbox/lifecycle_errors.h"
#include "tests/fake-opensandbox/lifecycle_json.h"
#include "tests/fake-opensandbox/query_params.h"

namespace fake_opensandbox {
namespace {

// Snapshot: id, sandboxId, name?, status {state, reason?, message?, lastTransitionAt},
// createdAt; null fields omitted as everywhere in the lifecycle API.
void WriteSnapshot(JsonWriter& w, const SnapshotInfo& info) {
  w.StartObject();
  w.Key("id");
  WriteString(w, info.id);
  w.Key("sandboxId");
  WriteString(w, info.sandbox_id);
  if (info.name) {
    w.Key("name");
    WriteString(w, *info.name);
  }
  w.Key("status");
  w.StartObject();
  w.Key("state");
  WriteString(w, info.state);
  w.Key("reason");
  WriteString(w, info.reason);
  w.Key("message");
  WriteString(w, info.message);
  w.Key("lastTransitionAt");
  WriteString(w, FormatPydanticTime(info.last_transition_at));
  w.EndObject();
  w.Key("createdAt");
  WriteString(w, FormatPydanticTime(info.created_at));
  w.EndObject();
}

std::string SnapshotJson(const SnapshotInfo& info) {
  rapidjson::StringBuffer buffer;
  JsonWriter w(buffer);
  WriteSnapshot(w, info);
  return buffer.GetString();
}

void SendSnapshotNotFound(httplib::Response& res, const std::string& id) {
  SendCodeMessage(res, 404, "SNAPSHOT::NOT_FOUND", "Snapshot " + id + " not found.");
}

// CreateSnapshotRequest: optional body; `name` a string of at least one character.
// Extra fields are ignored (pydantic's default).
bool ParseCreateSnapshot(const httplib::Request& req, std::optional<std::string>* name, ValidationErrors* errors) {
  if (req.body.empty()) return true;
  rapidjson::Document doc;
  if (doc.Parse(req.body.c_str(), req.body.size()).HasParseError()) {
    rapidjson::Value empty(rapidjson::kObjectType);
    errors->Add("json_invalid", {std::string("body"), static_cast<int>(doc.GetErrorOffset())}, "JSON decode error",
                &empty, "{\"error\":\"Expecting value\"}");
    return false;
  }
  if (doc.IsNull()) return true;
  if (!doc.IsObject()) {
    errors->Add("model_attributes_type", {std::string("body")},
                "Input should be a valid dictionary or object to extract fields from", &doc);
    return false;
  }
  auto it = doc.FindMember("name");
  if (it == doc.MemberEnd() || it->value.IsNull()) return true;
  const ValidationErrors::Loc loc = {std::string("body"), std::string("name")};
  if (!it->value.IsString()) {
    errors->Add("string_type", loc, "Input should be a valid string", &it->value);
    return false;
  }
  if (it->value.GetStringLength() == 0) {
    errors->Add("string_too_short", loc, "String should have at least 1 character", &it->value,
                "{\"min_length\":1}");
    return false;
  }
  *name = std::string(it->value.GetString(), it->value.GetStringLength());
  return true;
}

void HandleCreateSnapshot(const httplib::Request& req, httplib::Response& res, LifecycleContext* ctx) {
  const std::string id = req.matches[1];
  ValidationErrors errors;
  std::optional<std::string> name;
  if (!ParseCreateSnapshot(req, &name, &errors)) return SendJson(res, 422, errors.ToJson());
  auto source = ctx->registry->Get(id, false);
  if (!source) return SendSandboxNotFound(res, *ctx, id);
  if (!ctx->config.snapshots) {
    return SendCodeMessage(res, 501, "SNAPSHOT::NOT_IMPLEMENTED", "Snapshots are not supported by this runtime.");
  }
  if (source->state != "Running") {
    return SendCodeMessage(res, 409, "SNAPSHOT::INVALID_SOURCE_STATE",
                           "Sandbox " + id + " must be Running to be snapshotted (state " + source->state + ").");
  }
  SnapshotInfo created = ctx->snapshots->Begin(id, name, source->host_root, source->origin_image);
  res.set_header("Location", "/v1/snapshots/" + created.id);
  SendJson(res, 202, SnapshotJson(created));
}

void HandleListSnapshots(const httplib::Request& req, httplib::Response& res, LifecycleContext* ctx) {
  ValidationErrors errors;
  Paging paging;
  ParsePaging(req, &paging, &errors);
  if (!errors.empty()) return SendJson(res, 422, errors.ToJson());
  const std::string sandbox_id = req.get_param_value("sandboxId");
  std::vector<std::string> states;
  for (size_t i = 0; i < req.get_param_value_count("state"); ++i) {
    states.push_back(Lower(req.get_param_value("state", i)));
  }
  std::vector<SnapshotInfo> matching;
  for (auto& info : ctx->snapshots->List()) {
    if (!sandbox_id.empty() && info.sandbox_id != sandbox_id) continue;
    if (!states.empty() && std::find(states.begin(), states.end(), Lower(info.state)) == states.end()) continue;
    matching.push_back(std::move(info));
  }
  std::sort(matching.begin(), matching.end(), [](const SnapshotInfo& a, const SnapshotInfo& b) {
    if (a.created_at != b.created_at) return a.created_at > b.created_at;
    return a.sequence > b.sequence;
  });
  rapidjson::StringBuffer buffer;
  JsonWriter w(buffer);
  WritePage(w, paging, matching.size(), [&](size_t i) { WriteSnapshot(w, matching[i]); });
  SendJson(res, 200, buffer.GetString());
}

void HandleGetSnapshot(const httplib::Request& req, httplib::Response& res, LifecycleContext* ctx) {
  const std::string id = req.matches[1];
  auto info = ctx->snapshots->Get(id);
  if (!info) return SendSnapshotNotFound(res, id);
  SendJson(res, 200, SnapshotJson(*info));
}

void HandleDeleteSnapshot(const httplib::Request& req, httplib::Response& res, LifecycleContext* ctx) {
  const std::string id = req.matches[1];
  switch (ctx->snapshots->Delete(id)) {
    case SnapshotStore::DeleteResult::kDeleted:
      res.status = 204;
      return;
    case SnapshotStore::DeleteResult::kNotFound:
      return SendSnapshotNotFound(res, id);
    case SnapshotStore::DeleteResult::kCreating:
      return SendCodeMessage(res, 409, "SNAPSHOT::INVALID_STATE",
                             "Snapshot " + id + " is still being created and cannot be deleted.");
  }
}

}  // namespace

void RegisterSnapshotRoutes(httplib::Server& server, LifecycleContext* ctx) {
  const std::string v1 = kV1Prefix;
  auto bind = [ctx](void (*handler)(const httplib::Request&, httplib::Response&, LifecycleContext*)) {
    return [ctx, handler](const httplib::Request& req, httplib::Response& res) { handler(req, res, ctx); };
  };
  server.Post(v1 + "/sandboxes/([^/]+)/snapshots", bind(HandleCreateSnapshot));
  server.Get(v1 + "/snapshots", bind(HandleListSnapshots));
  server.Get(v1 + "/snapshots/([^/]+)", bind(HandleGetSnapshot));
  server.Delete(v1 + "/snapshots/([^/]+)", bind(HandleDeleteSnapshot));
}

}  // namespace fake_opensandbox
