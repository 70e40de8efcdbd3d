// The lifecycle API (docs/opensandbox.md §1.3–1.10): sandboxes CRUD, pause/resume, renew, metadata,
// endpoints, /health, and the snapshot routes a runtime without snapshots answers.

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

namespace fake_opensandbox {
namespace {

using Loc = ValidationErrors::Loc;

// pydantic's lax int from a query/path string; nullopt if it is not an integer.
std::optional<long long> ParseQueryInt(std::string text) {
  while (!text.empty() && isspace(static_cast<unsigned char>(text.back()))) text.pop_back();
  size_t start = 0;
  while (start < text.size() && isspace(static_cast<unsigned char>(text[start]))) ++start;
  text = text.substr(start);
  static const std::regex kInt("[-+]?[0-9]{1,18}");
  if (!std::regex_match(text, kInt)) return std::nullopt;
  return std::stoll(text);
}

std::optional<bool> ParseQueryBool(std::string text) {
  for (auto& c : text) c = static_cast<char>(tolower(static_cast<unsigned char>(c)));
  for (const char* t : {"1", "on", "t", "true", "y", "yes"}) {
    if (text == t) return true;
  }
  for (const char* f : {"0", "off", "f", "false", "n", "no"}) {
    if (text == f) return false;
  }
  return std::nullopt;
}

void AddIntParsingError(ValidationErrors& errors, const Loc& loc, const std::string& input) {
  errors.AddWithStringInput("int_parsing", loc,
                            "Input should be a valid integer, unable to parse string as an integer",
                            input);
}

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

std::string Lower(std::string s) {
  for (auto& c : s) c = static_cast<char>(tolower(static_cast<unsigned char>(c)));
  return s;
}

void HandleCreate(const httplib::Request& req, httplib::Response& res, LifecycleContext* ctx) {
  CreateSpec spec;
  Rejection rejection;
  if (!ParseCreateRequest(req.body, ctx->config, &spec, &rejection)) {
    SendJson(res, rejection.status, rejection.body);
    return;
  }
  SandboxInfo created;
  std::string error;
  if (!ctx->registry->Create(spec, &created, &error)) {
    SendCodeMessage(res, 500, RuntimeNamespace(*ctx) + "SANDBOX_START_FAILED",
                    "Failed to start sandbox: " + error);
    return;
  }
  SendJson(res, 202, CreateResponseJson(created, spec));
}

void HandleList(const httplib::Request& req, httplib::Response& res, LifecycleContext* ctx) {
  ValidationErrors errors;
  long long page = 1, page_size = 20;
  if (req.has_param("page")) {
    std::string text = req.get_param_value("page");
    auto value = ParseQueryInt(text);
    if (!value) {
      AddIntParsingError(errors, {std::string("query"), std::string("page")}, text);
    } else if (*value < 1) {
      errors.AddWithStringInput("greater_than_equal", {std::string("query"), std::string("page")},
                                "Input should be greater than or equal to 1", text, "{\"ge\":1}");
    } else {
      page = *value;
    }
  }
  if (req.has_param("pageSize")) {
    std::string text = req.get_param_value("pageSize");
    auto value = ParseQueryInt(text);
    Loc loc = {std::string("query"), std::string("pageSize")};
    if (!value) {
      AddIntParsingError(errors, loc, text);
    } else if (*value < 1) {
      errors.AddWithStringInput("greater_than_equal", loc,
                                "Input should be greater than or equal to 1", text, "{\"ge\":1}");
    } else if (*value > 200) {
      errors.AddWithStringInput("less_than_equal", loc,
                                "Input should be less than or equal to 200", text, "{\"le\":200}");
    } else {
      page_size = *value;
    }
  }
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
  long long total = static_cast<long long>(matching.size());
  long long total_pages = (total + page_size - 1) / page_size;
  rapidjson::StringBuffer buffer;
  JsonWriter w(buffer);
  w.StartObject();
  w.Key("items");
  w.StartArray();
  long long first = (page - 1) * page_size;
  for (long long i = first; i < total && i < first + page_size; ++i) WriteSandbox(w, matching[i]);
  w.EndArray();
  w.Key("pagination");
  w.StartObject();
  w.Key("page");
  w.Int64(page);
  w.Key("pageSize");
  w.Int64(page_size);
  w.Key("totalItems");
  w.Int64(total);
  w.Key("totalPages");
  w.Int64(total_pages);
  w.Key("hasNextPage");
  w.Bool(page < total_pages);
  w.EndObject();
  w.EndObject();
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

void HandleEndpoint(const httplib::Request& req, httplib::Response& res, LifecycleContext* ctx) {
  std::string id = req.matches[1];
  std::string port_text = req.matches[2];
  ValidationErrors errors;
  auto port = ParseQueryInt(port_text);
  if (!port) AddIntParsingError(errors, {std::string("path"), std::string("port")}, port_text);
  bool use_server_proxy = false;
  if (req.has_param("use_server_proxy")) {
    std::string text = req.get_param_value("use_server_proxy");
    auto value = ParseQueryBool(text);
    if (!value) {
      errors.AddWithStringInput("bool_parsing",
                                {std::string("query"), std::string("use_server_proxy")},
                                "Input should be a valid boolean, unable to interpret input", text);
    } else {
      use_server_proxy = *value;
    }
  }
  bool has_expires = req.has_param("expires");
  if (has_expires) {
    std::string text = req.get_param_value("expires");
    if (!ParseQueryInt(text)) {
      AddIntParsingError(errors, {std::string("query"), std::string("expires")}, text);
    }
  }
  if (!errors.empty()) return SendJson(res, 422, errors.ToJson());
  auto info = ctx->registry->Get(id, false);
  if (!info) return SendSandboxNotFound(res, *ctx, id);
  if (*port < 1 || *port > 65535) {
    return SendCodeMessage(res, 400, RuntimeNamespace(*ctx) + "INVALID_PORT",
                           "Port must be between 1 and 65535.");
  }
  if (has_expires) {
    if (use_server_proxy) {
      return SendCodeMessage(res, 400, "SANDBOX::INVALID_PARAMETER",
                             "expires cannot be combined with use_server_proxy.");
    }
    return SendCodeMessage(res, 400, "SANDBOX::API_NOT_SUPPORTED",
                           "Signed endpoints are not supported by this runtime.");
  }
  std::string p = std::to_string(*port);
  std::string endpoint =
      use_server_proxy
          ? "127.0.0.1:" + std::to_string(ctx->port) + "/sandboxes/" + id + "/proxy/" + p
          : "127.0.0.1:" + std::to_string(info->execd_port) + "/proxy/" + p;
  rapidjson::StringBuffer buffer;
  JsonWriter w(buffer);
  w.StartObject();
  w.Key("endpoint");
  WriteString(w, endpoint);
  if (*port == 18080 && info->has_network_policy) {
    w.Key("headers");
    w.StartObject();
    w.Key("OPENSANDBOX-EGRESS-AUTH");
    WriteString(w, info->egress_token);
    w.EndObject();
  }
  w.EndObject();
  SendJson(res, 200, buffer.GetString());
}

void HandleCreateSnapshot(const httplib::Request& req, httplib::Response& res,
                          LifecycleContext* ctx) {
  std::string id = req.matches[1];
  if (!ctx->registry->Get(id, false)) return SendSandboxNotFound(res, *ctx, id);
  SendCodeMessage(res, 501, "SNAPSHOT::NOT_IMPLEMENTED",
                  "Snapshots are not supported by this runtime.");
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
  server.Get(v1 + "/sandboxes/([^/]+)/endpoints/([^/]+)", bind(HandleEndpoint));
  server.Post(v1 + "/sandboxes/([^/]+)/snapshots", bind(HandleCreateSnapshot));
  server.Get(v1 + "/snapshots", [](const httplib::Request&, httplib::Response& res) {
    SendJson(res, 200,
             "{\"items\":[],\"pagination\":{\"page\":1,\"pageSize\":20,\"totalItems\":0,"
             "\"totalPages\":0,\"hasNextPage\":false}}");
  });
  auto snapshot_not_found = [](const httplib::Request& req, httplib::Response& res) {
    SendCodeMessage(res, 404, "SNAPSHOT::NOT_FOUND",
                    "Snapshot " + std::string(req.matches[1]) + " not found.");
  };
  server.Get(v1 + "/snapshots/([^/]+)", snapshot_not_found);
  server.Delete(v1 + "/snapshots/([^/]+)", snapshot_not_found);
}

}  // namespace fake_opensandbox
