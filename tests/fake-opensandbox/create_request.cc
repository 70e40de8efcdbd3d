#include "tests/fake-opensandbox/create_request.h"

#include <cctype>
#include <cmath>
#include <regex>

#include "rapidjson/document.h"
#include "rapidjson/stringbuffer.h"
#include "rapidjson/writer.h"
#include "tests/fake-opensandbox/lifecycle_errors.h"
#include "tests/fake-opensandbox/metadata_labels.h"
#include "tests/fake-opensandbox/pydantic_checks.h"
#include "tests/fake-opensandbox/sandbox_cgroup.h"  // ParseCpuLimit

namespace fake_opensandbox {
namespace {

using namespace pydantic;
using Loc = ValidationErrors::Loc;
using rapidjson::Value;

// A volume's backend object: pydantic's field checks, filling `out` as it goes.
bool CheckBackend(const Value& b, const Loc& at, VolumeSpec::Backend backend, Checker& check,
                  VolumeSpec* out) {
  ValidationErrors& errors = check.errors;
  bool ok = true;
  auto optional_bool = [&](const char* name, bool* value) {
    const Value* v = Member(b, name);
    if (!IsUnset(v) && !check.Bool(*v, Append(at, name), value)) ok = false;
  };
  auto pattern = [&](const char* name, const std::string& value, const char* regex, size_t max_length) {
    if (max_length && value.size() > max_length) {
      errors.Add("string_too_long", Append(at, name),
                 "String should have at most " + std::to_string(max_length) + " characters",
                 Member(b, name), "{\"max_length\":" + std::to_string(max_length) + "}");
      ok = false;
    } else if (!std::regex_search(value, std::regex(regex))) {
      std::string escaped;
      for (char c : std::string(regex)) {
        if (c == '\\' || c == '"') escaped += '\\';
        escaped += c;
      }
      errors.Add("string_pattern_mismatch", Append(at, name),
                 std::string("String should match pattern '") + regex + "'", Member(b, name),
                 "{\"pattern\":\"" + escaped + "\"}");
      ok = false;
    }
  };
  auto min_length = [&](const char* name, const std::string& value, size_t min) {
    if (value.size() >= min) return;
    errors.Add("string_too_short", Append(at, name),
               "String should have at least " + std::to_string(min) + " character" + (min == 1 ? "" : "s"),
               Member(b, name), "{\"min_length\":" + std::to_string(min) + "}");
    ok = false;
  };
  out->backend = backend;
  switch (backend) {
    case VolumeSpec::Backend::kHost:
      if (check.RequiredString(b, "path", at, &out->host_path)) {
        pattern("path", out->host_path, "^(/|[A-Za-z]:[\\\\/])", 0);
      } else {
        ok = false;
      }
      break;
    case VolumeSpec::Backend::kPvc: {
      if (check.RequiredString(b, "claimName", at, &out->claim_name)) {
        pattern("claimName", out->claim_name, "^[a-z0-9]([-a-z0-9]*[a-z0-9])?$", 253);
      } else {
        ok = false;
      }
      optional_bool("createIfNotExists", &out->create_if_not_exists);
      optional_bool("deleteOnSandboxTermination", &out->delete_on_termination);
      if (const Value* v = Member(b, "storageClass"); !IsUnset(v) && !check.String(*v, Append(at, "storageClass"))) ok = false;
      if (const Value* v = Member(b, "storage"); !IsUnset(v)) {
        std::string storage;
        if (check.String(*v, Append(at, "storage"), &storage)) {
          pattern("storage", storage, "^\\d+(\\.\\d+)?(Ki|Mi|Gi|Ti|Pi|Ei)?$", 0);
        } else {
          ok = false;
        }
      }
      if (const Value* v = Member(b, "accessModes"); !IsUnset(v)) {
        std::vector<std::string> modes;
        if (!check.StringList(*v, Append(at, "accessModes"), &modes)) ok = false;
      }
      break;
    }
    case VolumeSpec::Backend::kOssfs: {
      if (check.RequiredString(b, "bucket", at, &out->bucket)) {
        if (out->bucket.size() > 63) {
          errors.Add("string_too_long", Append(at, "bucket"), "String should have at most 63 characters",
                     Member(b, "bucket"), "{\"max_length\":63}");
          ok = false;
        }
        min_length("bucket", out->bucket, 3);
      } else {
        ok = false;
      }
      if (check.RequiredString(b, "endpoint", at, &out->endpoint)) {
        min_length("endpoint", out->endpoint, 1);
      } else {
        ok = false;
      }
      if (const Value* v = Member(b, "version"); !IsUnset(v)) {
        if (!check.String(*v, Append(at, "version"), &out->version)) {
          ok = false;
        } else if (out->version != "1.0" && out->version != "2.0") {
          errors.Add("literal_error", Append(at, "version"), "Input should be '1.0' or '2.0'", v,
                     "{\"expected\":\"'1.0' or '2.0'\"}");
          ok = false;
        }
      }
      if (const Value* v = Member(b, "options"); !IsUnset(v)) {
        if (!check.StringList(*v, Append(at, "options"), &out->options)) ok = false;
      }
      std::string key_id, key_secret;
      const bool has_id = check.RequiredString(b, "accessKeyId", at, &key_id);
      const bool has_secret = check.RequiredString(b, "accessKeySecret", at, &key_secret);
      if (has_id) min_length("accessKeyId", key_id, 1);
      if (has_secret) min_length("accessKeySecret", key_secret, 1);
      ok = ok && has_id && has_secret;
      out->has_credentials = has_id && has_secret && !key_id.empty() && !key_secret.empty();
      break;
    }
  }
  return ok;
}

void CheckVolumes(const Value& v, const Loc& loc, Checker& check, std::vector<VolumeSpec>* out) {
  if (!v.IsArray()) {
    check.errors.Add("list_type", loc, "Input should be a valid list", &v);
    return;
  }
  static const std::regex kName("^[a-z0-9]([-a-z0-9]*[a-z0-9])?$");
  int index = 0;
  for (const auto& volume : v.GetArray()) {
    Loc at = Append(loc, index++);
    if (!check.Model(volume, at, "Volume")) continue;
    VolumeSpec spec;
    bool fields_ok = true;
    if (check.RequiredString(volume, "name", at, &spec.name)) {
      if (spec.name.size() > 63 || !std::regex_match(spec.name, kName)) {
        check.errors.Add("string_pattern_mismatch", Append(at, "name"),
                         "String should match pattern '^[a-z0-9]([-a-z0-9]*[a-z0-9])?$'",
                         Member(volume, "name"),
                         "{\"pattern\":\"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$\"}");
        fields_ok = false;
      }
    } else {
      fields_ok = false;
    }
    if (check.RequiredString(volume, "mountPath", at, &spec.mount_path)) {
      if (spec.mount_path.empty() || spec.mount_path[0] != '/') {
        check.errors.Add("string_pattern_mismatch", Append(at, "mountPath"),
                         "String should match pattern '^/.*'", Member(volume, "mountPath"),
                         "{\"pattern\":\"^/.*\"}");
        fields_ok = false;
      }
    } else {
      fields_ok = false;
    }
    if (const Value* r = Member(volume, "readOnly"); !IsUnset(r)) {
      if (!check.Bool(*r, Append(at, "readOnly"), &spec.read_only)) fields_ok = false;
    }
    if (const Value* s = Member(volume, "subPath"); !IsUnset(s)) {
      if (!check.String(*s, Append(at, "subPath"), &spec.sub_path)) fields_ok = false;
    }
    int backends = 0;
    const std::pair<const char*, VolumeSpec::Backend> kBackends[] = {
        {"host", VolumeSpec::Backend::kHost},
        {"pvc", VolumeSpec::Backend::kPvc},
        {"ossfs", VolumeSpec::Backend::kOssfs}};
    for (const auto& [backend, kind] : kBackends) {
      const Value* b = Member(volume, backend);
      if (IsUnset(b)) continue;
      ++backends;
      Loc backend_at = Append(at, backend);
      if (!check.Model(*b, backend_at, "backend") || !CheckBackend(*b, backend_at, kind, check, &spec)) {
        fields_ok = false;
      }
    }
    if (fields_ok && backends != 1) {
      check.errors.Add("value_error", at,
                       backends == 0
                           ? "Value error, Exactly one backend (host, pvc, ossfs) must be "
                             "specified, but none was provided."
                           : "Value error, Exactly one backend (host, pvc, ossfs) must be "
                             "specified, but multiple were provided.",
                       &volume, "{\"error\":{}}");
    }
    out->push_back(std::move(spec));
  }
}

Rejection BadRequest(const std::string& code, const std::string& message) {
  return Rejection{400, CodeMessageBody(code, message)};
}

// The policy as the server hands it to the egress sidecar (OPENSANDBOX_EGRESS_RULES:
// json.dumps(model_dump(by_alias=True, exclude_none=True))): `egress` always there, an
// unset defaultAction left out. Called once the policy passed validation.
std::string EgressRulesEnv(const rapidjson::Value& policy) {
  rapidjson::StringBuffer buffer;
  rapidjson::Writer<rapidjson::StringBuffer> w(buffer);
  w.StartObject();
  if (auto d = policy.FindMember("defaultAction"); d != policy.MemberEnd() && d->value.IsString()) {
    w.Key("defaultAction");
    w.String(d->value.GetString(), d->value.GetStringLength());
  }
  w.Key("egress");
  w.StartArray();
  if (auto egress = policy.FindMember("egress"); egress != policy.MemberEnd() && egress->value.IsArray()) {
    for (const auto& rule : egress->value.GetArray()) {
      w.StartObject();
      for (const char* field : {"action", "target"}) {
        auto it = rule.FindMember(field);
        w.Key(field);
        if (it != rule.MemberEnd() && it->value.IsString()) {
          w.String(it->value.GetString(), it->value.GetStringLength());
        } else {
          w.String("");
        }
      }
      w.EndObject();
    }
  }
  w.EndArray();
  w.EndObject();
  return buffer.GetString();
}

}  // namespace

bool ShellSplit(const std::string& text, std::vector<std::string>* words) {
  words->clear();
  std::string current;
  bool in_word = false;
  char quote = 0;
  for (size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    if (quote == '\'') {
      if (c == '\'') {
        quote = 0;
      } else {
        current += c;
      }
      continue;
    }
    if (quote == '"') {
      if (c == '"') {
        quote = 0;
      } else if (c == '\\' && i + 1 < text.size() &&
                 (text[i + 1] == '"' || text[i + 1] == '\\' || text[i + 1] == '$' ||
                  text[i + 1] == '`')) {
        current += text[++i];
      } else {
        current += c;
      }
      continue;
    }
    if (isspace(static_cast<unsigned char>(c))) {
      if (in_word) words->push_back(current);
      current.clear();
      in_word = false;
      continue;
    }
    in_word = true;
    if (c == '\'' || c == '"') {
      quote = c;
    } else if (c == '\\') {
      if (i + 1 >= text.size()) return false;
      current += text[++i];
    } else {
      current += c;
    }
  }
  if (quote) return false;
  if (in_word) words->push_back(current);
  return true;
}

bool ParseCreateRequest(const std::string& body, const FakeConfig& config, CreateSpec* spec,
                        Rejection* rejection) {
  ValidationErrors errors;
  Checker check{errors};
  const Loc root = {std::string("body")};
  rapidjson::Document doc;
  if (body.empty()) {
    errors.Add("missing", root, "Field required", nullptr);
    *rejection = {422, errors.ToJson()};
    return false;
  }
  doc.Parse(body.c_str(), body.size());
  if (doc.HasParseError()) {
    rapidjson::Value empty(rapidjson::kObjectType);
    errors.Add("json_invalid", {std::string("body"), static_cast<int>(doc.GetErrorOffset())},
               "JSON decode error", &empty, "{\"error\":\"Expecting value\"}");
    *rejection = {422, errors.ToJson()};
    return false;
  }
  if (!doc.IsObject()) {
    errors.Add("model_attributes_type", root,
               "Input should be a valid dictionary or object to extract fields from", &doc);
    *rejection = {422, errors.ToJson()};
    return false;
  }

  // Field checks, in the order the fields are declared upstream.
  std::string image_uri;
  bool image_present = false;
  if (const Value* image = Member(doc, "image"); !IsUnset(image)) {
    Loc at = Append(root, "image");
    if (check.Model(*image, at, "ImageSpec")) {
      image_present = check.RequiredString(*image, "uri", at, &image_uri);
      if (const Value* auth = Member(*image, "auth"); !IsUnset(auth)) {
        Loc auth_at = Append(at, "auth");
        if (check.Model(*auth, auth_at, "ImageAuth")) {
          check.RequiredString(*auth, "username", auth_at);
          check.RequiredString(*auth, "password", auth_at);
        }
      }
    }
  }
  std::string snapshot_id;
  if (const Value* v = Member(doc, "snapshotId"); !IsUnset(v)) {
    check.String(*v, Append(root, "snapshotId"), &snapshot_id);
  }
  std::string os, arch;
  bool platform_present = false;
  if (const Value* v = Member(doc, "platform"); !IsUnset(v)) {
    Loc at = Append(root, "platform");
    if (check.Model(*v, at, "PlatformSpec")) {
      bool os_ok = check.RequiredString(*v, "os", at, &os);
      bool arch_ok = check.RequiredString(*v, "arch", at, &arch);
      platform_present = os_ok && arch_ok;
    }
  }
  double timeout = 0;
  bool timeout_present = false;
  if (const Value* v = Member(doc, "timeout"); !IsUnset(v)) {
    Loc at = Append(root, "timeout");
    if (check.Int(*v, at, &timeout)) {
      if (timeout < 60) {
        errors.Add("greater_than_equal", at, "Input should be greater than or equal to 60", v,
                   "{\"ge\":60}");
      } else {
        timeout_present = true;
      }
    }
  }
  bool limits_present = false;
  if (const Value* v = Member(doc, "resourceLimits"); !IsUnset(v)) {
    StringPairs limits;
    limits_present = check.StringMap(*v, Append(root, "resourceLimits"), &limits, false);
    for (const auto& [key, value] : limits) {
      // As the Docker runtime reads it: a value it cannot parse is ignored (no limit).
      if (key == "cpu") spec->cpu_limit = ParseCpuLimit(value).value_or(0);
    }
  }
  if (const Value* v = Member(doc, "resourceRequests"); !IsUnset(v)) {
    check.StringMap(*v, Append(root, "resourceRequests"), nullptr, false);
  }
  if (const Value* v = Member(doc, "env"); !IsUnset(v)) {
    check.StringMap(*v, Append(root, "env"), &spec->env, true);
  }
  if (const Value* v = Member(doc, "metadata"); !IsUnset(v)) {
    spec->metadata_given = check.StringMap(*v, Append(root, "metadata"), &spec->metadata, false);
  }
  bool entrypoint_present = false;
  if (const Value* v = Member(doc, "entrypoint"); !IsUnset(v)) {
    Loc at = Append(root, "entrypoint");
    if (check.StringList(*v, at, &spec->entrypoint)) {
      if (spec->entrypoint.empty()) {
        errors.Add("too_short", at, "List should have at least 1 item after validation, not 0", v,
                   "{\"field_type\":\"List\",\"min_length\":1,\"actual_length\":0}");
      } else {
        entrypoint_present = true;
      }
    }
  }
  if (const Value* v = Member(doc, "networkPolicy"); !IsUnset(v)) {
    Loc at = Append(root, "networkPolicy");
    if (check.Model(*v, at, "NetworkPolicy")) {
      spec->has_network_policy = true;
      if (const Value* d = Member(*v, "defaultAction"); !IsUnset(d)) {
        check.String(*d, Append(at, "defaultAction"));
      }
      if (const Value* egress = Member(*v, "egress"); !IsUnset(egress)) {
        Loc egress_at = Append(at, "egress");
        if (!egress->IsArray()) {
          errors.Add("list_type", egress_at, "Input should be a valid list", egress);
        } else {
          int index = 0;
          for (const auto& rule : egress->GetArray()) {
            Loc rule_at = Append(egress_at, index++);
            if (!check.Model(rule, rule_at, "NetworkRule")) continue;
            check.RequiredString(rule, "action", rule_at);
            std::string target;
            if (check.RequiredString(rule, "target", rule_at, &target) && target.empty()) {
              errors.Add("string_too_short", Append(rule_at, "target"),
                         "String should have at least 1 character", Member(rule, "target"),
                         "{\"min_length\":1}");
            }
          }
        }
      }
      spec->network_policy_json = EgressRulesEnv(*v);
    }
  }
  bool credential_proxy = false;
  if (const Value* v = Member(doc, "credentialProxy"); !IsUnset(v)) {
    Loc at = Append(root, "credentialProxy");
    if (check.Model(*v, at, "CredentialProxyConfig")) {
      if (const Value* e = Member(*v, "enabled"); e) check.Bool(*e, Append(at, "enabled"), &credential_proxy);
    }
  }
  bool secure_access = false;
  if (const Value* v = Member(doc, "secureAccess"); v) {
    check.Bool(*v, Append(root, "secureAccess"), &secure_access);
  }
  if (const Value* v = Member(doc, "volumes"); !IsUnset(v)) {
    CheckVolumes(*v, Append(root, "volumes"), check, &spec->volumes);
  }
  StringPairs extensions;
  if (const Value* v = Member(doc, "extensions"); !IsUnset(v)) {
    check.StringMap(*v, Append(root, "extensions"), &extensions, false);
  }
  if (!errors.empty()) {
    *rejection = {422, errors.ToJson()};
    return false;
  }

  // The model validator (pydantic "after" mode): one value_error on the whole body.
  auto model_error = [&](const std::string& message) {
    errors.Add("value_error", root, "Value error, " + message, &doc, "{\"error\":{}}");
    *rejection = {422, errors.ToJson()};
    return false;
  };
  std::string pool_ref;
  for (const auto& [key, value] : extensions) {
    if (key == "poolRef") pool_ref = value;
  }
  bool has_pool_ref = !IsBlank(pool_ref);
  if (!has_pool_ref) {
    if (credential_proxy && !spec->has_network_policy) {
      return model_error("credentialProxy.enabled requires networkPolicy.");
    }
    bool has_image = image_present && !IsBlank(image_uri);
    bool has_snapshot = !IsBlank(snapshot_id);
    if (has_image == has_snapshot) {
      return model_error("Exactly one of image or snapshotId must be provided.");
    }
    if (has_image && !entrypoint_present) {
      return model_error("Entrypoint is required when image is provided.");
    }
    if (!limits_present) {
      return model_error("resourceLimits is required when poolRef is not provided.");
    }
    if (has_image) spec->image_uri = image_uri;
    if (has_snapshot) spec->snapshot_id = snapshot_id;
  } else if (!IsBlank(snapshot_id)) {
    return model_error("snapshotId cannot be used together with poolRef.");
  }

  // Service checks (400).
  const bool docker = config.runtime == Runtime::kDocker;
  if (has_pool_ref) {
    if (docker) {  // services/docker/docker_service.py, before every other check
      *rejection = BadRequest("SANDBOX::UNSUPPORTED_POOL_REF",
                              "poolRef is not supported by the Docker provider. Use Kubernetes "
                              "BatchSandbox provider instead.");
      return false;
    }
    // services/k8s/kubernetes_service.py: what a pre-created pod cannot take, then the Pool.
    if (spec->has_network_policy) {
      *rejection = BadRequest("SANDBOX::INVALID_PARAMETER",
                              "networkPolicy cannot be used together with extensions.poolRef "
                              "because pooled pods are pre-created.");
      return false;
    }
    if (!spec->volumes.empty()) {
      *rejection = BadRequest("SANDBOX::INVALID_PARAMETER",
                              "Pool mode (extensions.poolRef) does not support volumes. Remove "
                              "'volumes' from the request or use template mode.");
      return false;
    }
    if (platform_present) {
      *rejection = BadRequest("SANDBOX::INVALID_PARAMETER",
                              "platform is not supported together with extensions.poolRef yet.");
      return false;
    }
    const std::pair<std::string, std::string>* pool = nullptr;
    for (const auto& named : config.pools) {
      if (named.first == pool_ref || (pool_ref == "*" && !pool)) pool = &named;
    }
    if (!pool) {
      *rejection = {404, CodeMessageBody("KUBERNETES::POOL_NOT_FOUND", "Pool '" + pool_ref + "' not found.")};
      return false;
    }
    // The pod comes from the pool's template: its image, and the request's entrypoint
    // or the task template's default (image and resourceLimits of the request unused).
    spec->pool_ref = pool->first;
    spec->image_uri = pool->second;
    if (spec->entrypoint.empty()) spec->entrypoint = {"tail", "-f", "/dev/null"};
  }
  for (const auto& [key, value] : extensions) {
    if (key != "access.renew.extend.seconds") continue;
    static const std::regex kDigits("[0-9]+");
    long long seconds = std::regex_match(value, kDigits) && value.size() < 12 ? std::stoll(value) : -1;
    if (seconds < 300 || seconds > 86400) {
      *rejection = BadRequest("SANDBOX::INVALID_PARAMETER",
                              "extensions['access.renew.extend.seconds'] must be an integer "
                              "between 300 and 86400.");
      return false;
    }
  }
  if (timeout_present) {
    if (timeout > static_cast<double>(config.max_timeout_s)) {
      *rejection = BadRequest(
          "SANDBOX::INVALID_PARAMETER",
          "Sandbox timeout " + (timeout < 1e15 ? std::to_string(static_cast<long long>(timeout))
                                               : std::string("value")) +
              " seconds exceeds the maximum of " + std::to_string(config.max_timeout_s) +
              " seconds.");
      return false;
    }
    spec->timeout_s = static_cast<int64_t>(timeout);
  }
  for (const auto& [key, value] : spec->metadata) {
    std::string problem = CheckLabelKey(key);
    if (problem.empty()) problem = CheckLabelValue(value);
    if (!problem.empty()) {
      *rejection = BadRequest("SANDBOX::INVALID_METADATA_LABEL",
                              "Invalid metadata label '" + key + "': " + problem + ".");
      return false;
    }
  }
  if (platform_present) {
    for (auto& c : os) c = static_cast<char>(tolower(static_cast<unsigned char>(c)));
    for (auto& c : arch) c = static_cast<char>(tolower(static_cast<unsigned char>(c)));
    if (os != "linux" && os != "windows") {
      *rejection = BadRequest("SANDBOX::INVALID_PARAMETER",
                              "Unsupported platform.os '" + os + "'. Supported: linux, windows.");
      return false;
    }
    if (arch != "amd64" && arch != "arm64") {
      *rejection = BadRequest("SANDBOX::INVALID_PARAMETER",
                              "Unsupported platform.arch '" + arch + "'. Supported: amd64, arm64.");
      return false;
    }
    spec->platform = std::make_pair(os, arch);
  }
  if (secure_access && (docker || config.ingress_route_mode == IngressRouteMode::kNone)) {
    *rejection = BadRequest("SANDBOX::INVALID_PARAMETER",
                            docker ? "secureAccess is not supported by the Docker runtime."
                                   : "secureAccess requires ingress gateway mode.");
    return false;
  }
  spec->secure_access = secure_access;
  // A restore without an entrypoint runs `tail -f /dev/null` (sandbox-lifecycle.yml).
  if (spec->snapshot_id && spec->entrypoint.empty()) spec->entrypoint = {"tail", "-f", "/dev/null"};
  spec->resolved_entrypoint = spec->entrypoint;
  if (docker && spec->entrypoint.size() == 1 &&
      spec->entrypoint[0].find_first_of(" \t\n") != std::string::npos) {
    if (!ShellSplit(spec->entrypoint[0], &spec->resolved_entrypoint)) {
      *rejection = BadRequest("DOCKER::INVALID_ENTRYPOINT",
                              "Entrypoint could not be parsed: No closing quotation");
      return false;
    }
  }
  bool all_blank = true;
  for (const auto& word : spec->resolved_entrypoint) all_blank = all_blank && IsBlank(word);
  if (spec->resolved_entrypoint.empty() || all_blank) {
    *rejection = BadRequest("DOCKER::INVALID_ENTRYPOINT", "Entrypoint must not be empty.");
    return false;
  }
  return true;
}

}  // namespace fake_opensandbox
