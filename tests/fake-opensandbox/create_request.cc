#include "tests/fake-opensandbox/create_request.h"

#include <cctype>
#include <cmath>
#include <regex>

#include "rapidjson/document.h"
#include "tests/fake-opensandbox/lifecycle_errors.h"
#include "tests/fake-opensandbox/metadata_labels.h"

namespace fake_opensandbox {
namespace {

using Loc = ValidationErrors::Loc;
using rapidjson::Value;

Loc Append(Loc loc, std::variant<std::string, int> part) {
  loc.push_back(std::move(part));
  return loc;
}

const Value* Member(const Value& object, const char* name) {
  auto it = object.FindMember(name);
  if (it == object.MemberEnd()) return nullptr;
  return &it->value;
}

// Absent or null (Optional fields accept both).
bool IsUnset(const Value* v) { return v == nullptr || v->IsNull(); }

// Each checker adds errors for the value at `loc` and returns true when it was valid.
struct Checker {
  ValidationErrors& errors;

  bool String(const Value& v, const Loc& loc, std::string* out = nullptr) {
    if (!v.IsString()) {
      errors.Add("string_type", loc, "Input should be a valid string", &v);
      return false;
    }
    if (out) *out = v.GetString();
    return true;
  }

  bool RequiredString(const Value& object, const char* name, const Loc& loc,
                      std::string* out = nullptr) {
    const Value* v = Member(object, name);
    if (!v) {
      errors.Add("missing", Append(loc, name), "Field required", &object);
      return false;
    }
    return String(*v, Append(loc, name), out);
  }

  // pydantic's lax int: ints, integral floats, numeric strings and bools.
  bool Int(const Value& v, const Loc& loc, double* out) {
    if (v.IsInt64() || v.IsUint64()) {
      *out = v.GetDouble();
      return true;
    }
    if (v.IsDouble()) {
      double d = v.GetDouble();
      if (std::floor(d) != d || !std::isfinite(d)) {
        errors.Add("int_from_float", loc,
                   "Input should be a valid integer, got a number with a fractional part", &v);
        return false;
      }
      *out = d;
      return true;
    }
    if (v.IsBool()) {
      *out = v.GetBool() ? 1 : 0;
      return true;
    }
    if (v.IsString()) {
      std::string s = v.GetString();
      while (!s.empty() && isspace(static_cast<unsigned char>(s.back()))) s.pop_back();
      size_t start = 0;
      while (start < s.size() && isspace(static_cast<unsigned char>(s[start]))) ++start;
      s = s.substr(start);
      static const std::regex kInt("[-+]?[0-9](_?[0-9])*");
      if (std::regex_match(s, kInt)) {
        std::string digits;
        for (char c : s) {
          if (c != '_') digits += c;
        }
        *out = std::stod(digits);
        return true;
      }
      errors.Add("int_parsing", loc,
                 "Input should be a valid integer, unable to parse string as an integer", &v);
      return false;
    }
    errors.Add("int_type", loc, "Input should be a valid integer", &v);
    return false;
  }

  // pydantic's lax bool.
  bool Bool(const Value& v, const Loc& loc, bool* out) {
    if (v.IsBool()) {
      *out = v.GetBool();
      return true;
    }
    if (v.IsInt64() && (v.GetInt64() == 0 || v.GetInt64() == 1)) {
      *out = v.GetInt64() == 1;
      return true;
    }
    if (v.IsString()) {
      std::string s = v.GetString();
      for (auto& c : s) c = static_cast<char>(tolower(static_cast<unsigned char>(c)));
      for (const char* t : {"1", "on", "t", "true", "y", "yes"}) {
        if (s == t) return *out = true, true;
      }
      for (const char* f : {"0", "off", "f", "false", "n", "no"}) {
        if (s == f) return *out = false, true;
      }
      errors.Add("bool_parsing", loc, "Input should be a valid boolean, unable to interpret input",
                 &v);
      return false;
    }
    errors.Add("bool_type", loc, "Input should be a valid boolean", &v);
    return false;
  }

  bool Model(const Value& v, const Loc& loc, const char* class_name) {
    if (v.IsObject()) return true;
    errors.Add("model_type", loc,
               std::string("Input should be a valid dictionary or instance of ") + class_name, &v,
               std::string("{\"class_name\":\"") + class_name + "\"}");
    return false;
  }

  // Dict[str, str] (allow_null_values: Dict[str, Optional[str]]).
  bool StringMap(const Value& v, const Loc& loc, StringPairs* out, bool allow_null_values) {
    if (!v.IsObject()) {
      errors.Add("dict_type", loc, "Input should be a valid dictionary", &v);
      return false;
    }
    bool ok = true;
    for (auto it = v.MemberBegin(); it != v.MemberEnd(); ++it) {
      std::string key = it->name.GetString();
      if (allow_null_values && it->value.IsNull()) continue;
      std::string value;
      if (String(it->value, Append(loc, key), &value)) {
        if (out) out->emplace_back(key, value);
      } else {
        ok = false;
      }
    }
    return ok;
  }

  bool StringList(const Value& v, const Loc& loc, std::vector<std::string>* out) {
    if (!v.IsArray()) {
      errors.Add("list_type", loc, "Input should be a valid list", &v);
      return false;
    }
    bool ok = true;
    int index = 0;
    for (const auto& item : v.GetArray()) {
      std::string s;
      if (String(item, Append(loc, index), &s)) {
        out->push_back(s);
      } else {
        ok = false;
      }
      ++index;
    }
    return ok;
  }
};

bool IsBlank(const std::string& s) {
  for (char c : s) {
    if (!isspace(static_cast<unsigned char>(c))) return false;
  }
  return true;
}

void CheckVolumes(const Value& v, const Loc& loc, Checker& check) {
  if (!v.IsArray()) {
    check.errors.Add("list_type", loc, "Input should be a valid list", &v);
    return;
  }
  static const std::regex kName("^[a-z0-9]([-a-z0-9]*[a-z0-9])?$");
  int index = 0;
  for (const auto& volume : v.GetArray()) {
    Loc at = Append(loc, index++);
    if (!check.Model(volume, at, "Volume")) continue;
    std::string name, mount;
    bool fields_ok = true;
    if (check.RequiredString(volume, "name", at, &name)) {
      if (name.size() > 63 || !std::regex_match(name, kName)) {
        check.errors.Add("string_pattern_mismatch", Append(at, "name"),
                         "String should match pattern '^[a-z0-9]([-a-z0-9]*[a-z0-9])?$'",
                         Member(volume, "name"),
                         "{\"pattern\":\"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$\"}");
        fields_ok = false;
      }
    } else {
      fields_ok = false;
    }
    if (check.RequiredString(volume, "mountPath", at, &mount)) {
      if (mount.empty() || mount[0] != '/') {
        check.errors.Add("string_pattern_mismatch", Append(at, "mountPath"),
                         "String should match pattern '^/.*'", Member(volume, "mountPath"),
                         "{\"pattern\":\"^/.*\"}");
        fields_ok = false;
      }
    } else {
      fields_ok = false;
    }
    int backends = 0;
    for (const char* backend : {"host", "pvc", "ossfs"}) {
      const Value* b = Member(volume, backend);
      if (IsUnset(b)) continue;
      ++backends;
      if (!check.Model(*b, Append(at, backend), "backend")) fields_ok = false;
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
  }
}

Rejection BadRequest(const std::string& code, const std::string& message) {
  return Rejection{400, CodeMessageBody(code, message)};
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
    limits_present = check.StringMap(*v, Append(root, "resourceLimits"), nullptr, false);
  }
  if (const Value* v = Member(doc, "resourceRequests"); !IsUnset(v)) {
    check.StringMap(*v, Append(root, "resourceRequests"), nullptr, false);
  }
  if (const Value* v = Member(doc, "env"); !IsUnset(v)) {
    check.StringMap(*v, Append(root, "env"), nullptr, true);
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
    CheckVolumes(*v, Append(root, "volumes"), check);
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
  }

  // Service checks (400).
  const bool docker = config.runtime == Runtime::kDocker;
  if (has_pool_ref) {
    *rejection = BadRequest("SANDBOX::UNSUPPORTED_POOL_REF",
                            docker ? "extensions.poolRef is not supported by the Docker runtime."
                                   : "Pool '" + pool_ref + "' is not available.");
    return false;
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
  if (secure_access) {
    *rejection = BadRequest("SANDBOX::INVALID_PARAMETER",
                            docker ? "secureAccess is not supported by the Docker runtime."
                                   : "secureAccess requires ingress gateway mode.");
    return false;
  }
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
