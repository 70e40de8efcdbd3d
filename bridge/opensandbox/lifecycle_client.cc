#include "bridge/opensandbox/lifecycle_client.h"

#include <rapidjson/document.h>

#include "bridge/base/json.h"
#include "bridge/base/time_util.h"
#include "bridge/http/header_map.h"
#include "common/percent_encoding.h"

namespace abx::opensandbox {
namespace {

Error NotItsApi(const std::string& what) {
  Error e = MakeError(ErrorCode::kUpstream,
                      what + ": the server answered something that is not the OpenSandbox API");
  return e;
}

bool DecodeSandboxValue(const rapidjson::Value& v, SandboxRecord* out) {
  if (!v.IsObject()) return false;
  auto id = json::GetString(v, "id");
  if (!id || id->empty()) return false;
  out->id = *id;
  if (const auto* image = json::GetMember(v, "image"); image && image->IsObject()) {
    out->image = json::GetString(*image, "uri").value_or("");
  }
  out->snapshot_id = json::GetString(v, "snapshotId").value_or("");
  if (const auto* status = json::GetMember(v, "status"); status && status->IsObject()) {
    out->state = json::GetString(*status, "state").value_or("");
    out->reason = json::GetString(*status, "reason").value_or("");
    out->message = json::GetString(*status, "message").value_or("");
  } else {
    return false;
  }
  out->created_at = NormalizeRfc3339(json::GetString(v, "createdAt").value_or(""));
  out->expires_at = NormalizeRfc3339(json::GetString(v, "expiresAt").value_or(""));
  if (const auto* metadata = json::GetMember(v, "metadata"); metadata && metadata->IsObject()) {
    for (auto& m : metadata->GetObject()) {
      if (m.value.IsString()) out->metadata[m.name.GetString()] = m.value.GetString();
    }
  }
  if (const auto* entrypoint = json::GetMember(v, "entrypoint"); entrypoint && entrypoint->IsArray()) {
    for (auto& e : entrypoint->GetArray()) {
      if (e.IsString()) out->entrypoint.emplace_back(e.GetString());
    }
  }
  return true;
}

bool DecodeSnapshotValue(const rapidjson::Value& v, SnapshotRecord* out) {
  if (!v.IsObject()) return false;
  auto id = json::GetString(v, "id");
  if (!id || id->empty()) return false;
  out->id = *id;
  out->sandbox_id = json::GetString(v, "sandboxId").value_or("");
  out->name = json::GetString(v, "name").value_or("");
  const auto* status = json::GetMember(v, "status");
  if (!status || !status->IsObject()) return false;
  out->state = json::GetString(*status, "state").value_or("");
  out->reason = json::GetString(*status, "reason").value_or("");
  out->message = json::GetString(*status, "message").value_or("");
  out->created_at = NormalizeRfc3339(json::GetString(v, "createdAt").value_or(""));
  return true;
}

}  // namespace

Result<SnapshotRecord> DecodeSnapshot(const std::string& body) {
  rapidjson::Document doc;
  doc.Parse<json::kParseFlags>(body.c_str(), body.size());
  SnapshotRecord record;
  if (doc.HasParseError() || !DecodeSnapshotValue(doc, &record)) return NotItsApi("snapshot");
  return record;
}

Result<SnapshotPage> DecodeSnapshotPage(const std::string& body) {
  rapidjson::Document doc;
  doc.Parse<json::kParseFlags>(body.c_str(), body.size());
  if (doc.HasParseError() || !doc.IsObject()) return NotItsApi("list snapshots");
  const auto* items = json::GetMember(doc, "items");
  if (!items || !items->IsArray()) return NotItsApi("list snapshots");
  SnapshotPage page;
  for (auto& item : items->GetArray()) {
    SnapshotRecord record;
    if (!DecodeSnapshotValue(item, &record)) return NotItsApi("list snapshots");
    page.items.push_back(std::move(record));
  }
  if (const auto* pagination = json::GetMember(doc, "pagination"); pagination && pagination->IsObject()) {
    page.has_next = json::GetBool(*pagination, "hasNextPage").value_or(false);
  }
  return page;
}

Result<SandboxRecord> DecodeSandbox(const std::string& body) {
  rapidjson::Document doc;
  doc.Parse<json::kParseFlags>(body.c_str(), body.size());
  SandboxRecord record;
  if (doc.HasParseError() || !DecodeSandboxValue(doc, &record)) return NotItsApi("sandbox");
  return record;
}

Result<SandboxPage> DecodeSandboxPage(const std::string& body) {
  rapidjson::Document doc;
  doc.Parse<json::kParseFlags>(body.c_str(), body.size());
  if (doc.HasParseError() || !doc.IsObject()) return NotItsApi("list sandboxes");
  const auto* items = json::GetMember(doc, "items");
  if (!items || !items->IsArray()) return NotItsApi("list sandboxes");
  SandboxPage page;
  for (auto& item : items->GetArray()) {
    SandboxRecord record;
    if (!DecodeSandboxValue(item, &record)) return NotItsApi("list sandboxes");
    page.items.push_back(std::move(record));
  }
  if (const auto* pagination = json::GetMember(doc, "pagination"); pagination && pagination->IsObject()) {
    page.has_next = json::GetBool(*pagination, "hasNextPage").value_or(false);
    page.total_items = json::GetInt(*pagination, "totalItems").value_or(0);
  }
  return page;
}

const std::string* SecureAccessToken(const Headers& headers) {
  for (const auto& [name, value] : headers) {
    if (http::EqualsIgnoreCase(name, kSecureAccessHeader)) return &value;
  }
  return nullptr;
}

Result<Endpoint> DecodeEndpoint(const std::string& body) {
  rapidjson::Document doc;
  doc.Parse<json::kParseFlags>(body.c_str(), body.size());
  if (doc.HasParseError() || !doc.IsObject()) return NotItsApi("get endpoint");
  auto endpoint = json::GetString(doc, "endpoint");
  if (!endpoint || endpoint->empty()) return NotItsApi("get endpoint");
  Endpoint out;
  out.endpoint = *endpoint;
  if (const auto* headers = json::GetMember(doc, "headers"); headers && headers->IsObject()) {
    for (auto& h : headers->GetObject()) {
      if (h.value.IsString()) out.headers.emplace_back(h.name.GetString(), h.value.GetString());
    }
  }
  return out;
}

HttpCall LifecycleClient::Call(std::string method, std::string path) const {
  HttpCall call;
  call.method = std::move(method);
  call.url = base_url_ + path;
  call.timeout_ms = timeout_ms_;
  if (!api_key_.empty()) call.headers.emplace_back("OPEN-SANDBOX-API-KEY", api_key_);
  return call;
}

Result<SandboxRecord> LifecycleClient::Create(const std::string& body_json,
                                              const CancelToken* cancel) {
  HttpCall call = Call("POST", "/sandboxes");
  call.headers.emplace_back("Content-Type", "application/json");
  call.body = body_json;
  auto answer = http_->Send(call, cancel, "create sandbox");
  if (!answer.ok()) return answer.error();
  return DecodeSandbox(answer->body);
}

Result<SandboxRecord> LifecycleClient::Get(const std::string& id, const CancelToken* cancel,
                                           int64_t* server_now_ms) {
  HttpCall call = Call("GET", "/sandboxes/" + PercentEncode(id));
  call.idempotent = true;
  auto answer = http_->Send(call, cancel, "get sandbox");
  if (!answer.ok()) return answer.error();
  if (server_now_ms) {
    *server_now_ms = ParseHttpDateMillis(answer->Header("date")).value_or(NowMillis());
  }
  return DecodeSandbox(answer->body);
}

Result<SandboxPage> LifecycleClient::List(const std::vector<std::string>& states,
                                          const std::map<std::string, std::string>& metadata,
                                          int page, int page_size, const CancelToken* cancel) {
  std::string query = "?page=" + std::to_string(page) + "&pageSize=" + std::to_string(page_size);
  for (const std::string& state : states) query += "&state=" + PercentEncode(state);
  if (!metadata.empty()) {
    // One `metadata` parameter whose decoded value is itself a query string.
    std::string inner;
    for (const auto& [k, v] : metadata) {
      if (!inner.empty()) inner += "&";
      inner += k + "=" + v;
    }
    query += "&metadata=" + PercentEncode(inner);
  }
  HttpCall call = Call("GET", "/sandboxes" + query);
  call.idempotent = true;
  auto answer = http_->Send(call, cancel, "list sandboxes");
  if (!answer.ok()) return answer.error();
  return DecodeSandboxPage(answer->body);
}

Status LifecycleClient::Delete(const std::string& id, const CancelToken* cancel) {
  // A repeated DELETE after a lost answer finds the sandbox gone (404), which Kill
  // reads as "already killed": safe to retry.
  HttpCall call = Call("DELETE", "/sandboxes/" + PercentEncode(id));
  call.idempotent = true;
  auto answer = http_->Send(call, cancel, "kill sandbox");
  if (!answer.ok()) return answer.error();
  return OkStatus();
}

Status LifecycleClient::Pause(const std::string& id, const CancelToken* cancel) {
  auto answer = http_->Send(Call("POST", "/sandboxes/" + PercentEncode(id) + "/pause"), cancel,
                            "pause sandbox");
  if (!answer.ok()) return answer.error();
  return OkStatus();
}

Status LifecycleClient::Resume(const std::string& id, const CancelToken* cancel) {
  auto answer = http_->Send(Call("POST", "/sandboxes/" + PercentEncode(id) + "/resume"), cancel,
                            "resume sandbox");
  if (!answer.ok()) return answer.error();
  return OkStatus();
}

Result<std::string> LifecycleClient::Renew(const std::string& id, const std::string& expires_at,
                                           const CancelToken* cancel) {
  HttpCall call = Call("POST", "/sandboxes/" + PercentEncode(id) + "/renew-expiration");
  call.headers.emplace_back("Content-Type", "application/json");
  call.body = "{\"expiresAt\":" + json::Quote(expires_at) + "}";
  auto answer = http_->Send(call, cancel, "set sandbox timeout");
  if (!answer.ok()) return answer.error();
  rapidjson::Document doc;
  doc.Parse<json::kParseFlags>(answer->body.c_str(), answer->body.size());
  if (doc.HasParseError() || !doc.IsObject() || !json::GetString(doc, "expiresAt")) {
    return NotItsApi("set sandbox timeout");
  }
  return NormalizeRfc3339(*json::GetString(doc, "expiresAt"));
}

Result<SandboxRecord> LifecycleClient::PatchMetadata(const std::string& id, const std::string& patch_json,
                                                     const CancelToken* cancel) {
  HttpCall call = Call("PATCH", "/sandboxes/" + PercentEncode(id) + "/metadata");
  call.headers.emplace_back("Content-Type", "application/json");
  call.body = patch_json;
  auto answer = http_->Send(call, cancel, "set sandbox metadata");
  if (!answer.ok()) return answer.error();
  return DecodeSandbox(answer->body);
}

Result<SnapshotRecord> LifecycleClient::CreateSnapshot(const std::string& sandbox_id, const std::string& name,
                                                       const CancelToken* cancel) {
  HttpCall call = Call("POST", "/sandboxes/" + PercentEncode(sandbox_id) + "/snapshots");
  call.headers.emplace_back("Content-Type", "application/json");
  call.body = name.empty() ? "{}" : "{\"name\":" + json::Quote(name) + "}";
  auto answer = http_->Send(call, cancel, "snapshot sandbox");
  if (!answer.ok()) return answer.error();
  return DecodeSnapshot(answer->body);
}

Result<SnapshotRecord> LifecycleClient::GetSnapshot(const std::string& id, const CancelToken* cancel) {
  HttpCall call = Call("GET", "/snapshots/" + PercentEncode(id));
  call.idempotent = true;
  auto answer = http_->Send(call, cancel, "get snapshot");
  if (!answer.ok()) return answer.error();
  return DecodeSnapshot(answer->body);
}

Result<SnapshotPage> LifecycleClient::ListSnapshots(const std::string& sandbox_id,
                                                    const std::vector<std::string>& states, int page,
                                                    int page_size, const CancelToken* cancel) {
  std::string query = "?page=" + std::to_string(page) + "&pageSize=" + std::to_string(page_size);
  if (!sandbox_id.empty()) query += "&sandboxId=" + PercentEncode(sandbox_id);
  for (const std::string& state : states) query += "&state=" + PercentEncode(state);
  HttpCall call = Call("GET", "/snapshots" + query);
  call.idempotent = true;
  auto answer = http_->Send(call, cancel, "list snapshots");
  if (!answer.ok()) return answer.error();
  return DecodeSnapshotPage(answer->body);
}

Status LifecycleClient::DeleteSnapshot(const std::string& id, const CancelToken* cancel) {
  // Not idempotent upstream (a second DELETE is 404), which the caller reads as "gone":
  // safe to retry.
  HttpCall call = Call("DELETE", "/snapshots/" + PercentEncode(id));
  call.idempotent = true;
  auto answer = http_->Send(call, cancel, "delete snapshot");
  if (!answer.ok()) return answer.error();
  return OkStatus();
}

Result<Endpoint> LifecycleClient::GetEndpoint(const std::string& id, int port,
                                              bool use_server_proxy, const CancelToken* cancel,
                                              int64_t* server_now_ms) {
  HttpCall call = Call("GET", "/sandboxes/" + PercentEncode(id) + "/endpoints/" +
                                 std::to_string(port) + "?use_server_proxy=" +
                                 (use_server_proxy ? "true" : "false"));
  call.idempotent = true;
  auto answer = http_->Send(call, cancel, "get sandbox endpoint");
  if (!answer.ok()) return answer.error();
  if (server_now_ms) *server_now_ms = ParseHttpDateMillis(answer->Header("date")).value_or(NowMillis());
  return DecodeEndpoint(answer->body);
}

Result<int64_t> LifecycleClient::ServerNowMillis(const CancelToken* cancel) {
  std::string root = base_url_;
  if (root.size() >= 3 && root.compare(root.size() - 3, 3, "/v1") == 0) root.resize(root.size() - 3);
  HttpCall call;
  call.url = root + "/health";
  call.timeout_ms = timeout_ms_;
  auto answer = http_->Send(call, cancel, "server health");
  if (!answer.ok()) return answer.error();
  auto now = ParseHttpDateMillis(answer->Header("date"));
  if (!now) return NotItsApi("server health (no Date header)");
  return *now;
}

Status LifecycleClient::CheckAuth(const CancelToken* cancel) {
  auto answer = http_->Send(Call("GET", "/sandboxes?page=1&pageSize=1"), cancel, "check API key");
  if (!answer.ok()) return answer.error();
  return OkStatus();
}

}  // namespace abx::opensandbox
