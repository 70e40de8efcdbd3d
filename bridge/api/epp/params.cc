#include "bridge/api/epp/params.h"

#include <cmath>

#include "bridge/base/base64.h"
#include "bridge/core/files/files.h"

namespace abx::epp {
namespace {

Error WrongType(const char* key, const char* what) {
  return InvalidParams(key, std::string(key) + " must be " + what);
}

}  // namespace

const rapidjson::Value* Params::Raw(const char* key) const {
  auto it = object_.FindMember(key);
  if (it == object_.MemberEnd() || it->value.IsNull()) return nullptr;
  return &it->value;
}

bool Params::Has(const char* key) const { return Raw(key) != nullptr; }

Result<std::string> Params::RequiredString(const char* key) const {
  const rapidjson::Value* v = Raw(key);
  if (!v) return InvalidParams(key, std::string(key) + " is required");
  if (!v->IsString()) return WrongType(key, "a string");
  return std::string(v->GetString(), v->GetStringLength());
}

Result<std::string_view> Params::RequiredStringView(const char* key) const {
  const rapidjson::Value* v = Raw(key);
  if (!v) return InvalidParams(key, std::string(key) + " is required");
  if (!v->IsString()) return WrongType(key, "a string");
  return std::string_view(v->GetString(), v->GetStringLength());
}

Result<std::optional<std::string>> Params::String(const char* key) const {
  const rapidjson::Value* v = Raw(key);
  if (!v) return std::optional<std::string>();
  if (!v->IsString()) return WrongType(key, "a string");
  return std::optional<std::string>(std::string(v->GetString(), v->GetStringLength()));
}

Result<std::optional<int64_t>> Params::Int(const char* key) const {
  const rapidjson::Value* v = Raw(key);
  if (!v) return std::optional<int64_t>();
  if (v->IsInt64()) return std::optional<int64_t>(v->GetInt64());
  if (v->IsDouble() && std::floor(v->GetDouble()) == v->GetDouble() &&
      std::fabs(v->GetDouble()) < 9e15) {
    return std::optional<int64_t>(static_cast<int64_t>(v->GetDouble()));
  }
  return WrongType(key, "an integer");
}

Result<std::optional<double>> Params::Number(const char* key) const {
  const rapidjson::Value* v = Raw(key);
  if (!v) return std::optional<double>();
  if (!v->IsNumber() || !std::isfinite(v->GetDouble())) return WrongType(key, "a number");
  return std::optional<double>(v->GetDouble());
}

Result<std::optional<bool>> Params::Bool(const char* key) const {
  const rapidjson::Value* v = Raw(key);
  if (!v) return std::optional<bool>();
  if (!v->IsBool()) return WrongType(key, "true or false");
  return std::optional<bool>(v->GetBool());
}

Result<std::optional<std::vector<std::string>>> Params::StringArray(const char* key) const {
  const rapidjson::Value* v = Raw(key);
  if (!v) return std::optional<std::vector<std::string>>();
  if (!v->IsArray()) return WrongType(key, "an array of strings");
  std::vector<std::string> out;
  for (auto& item : v->GetArray()) {
    if (!item.IsString()) return WrongType(key, "an array of strings");
    out.emplace_back(item.GetString(), item.GetStringLength());
  }
  return std::optional<std::vector<std::string>>(std::move(out));
}

Result<std::optional<std::map<std::string, std::string>>> Params::StringMap(
    const char* key) const {
  const rapidjson::Value* v = Raw(key);
  if (!v) return std::optional<std::map<std::string, std::string>>();
  if (!v->IsObject()) return WrongType(key, "an object of strings");
  std::map<std::string, std::string> out;
  for (auto& m : v->GetObject()) {
    if (!m.value.IsString()) return WrongType(key, "an object of strings");
    out[std::string(m.name.GetString(), m.name.GetStringLength())] =
        std::string(m.value.GetString(), m.value.GetStringLength());
  }
  return std::optional<std::map<std::string, std::string>>(std::move(out));
}

Result<std::optional<int>> OctalMode(const Params& params, const char* key) {
  ABX_ASSIGN_OR_RETURN(auto text, params.String(key));
  if (!text) return std::optional<int>();
  auto mode = core::ParseOctalMode(*text);
  if (!mode) return InvalidParams(key, std::string(key) + " must be an octal string like \"0644\"");
  return std::optional<int>(*mode);
}

Result<std::string> DataEncoding(const Params& params) {
  ABX_ASSIGN_OR_RETURN(auto encoding, params.String("encoding"));
  const std::string e = encoding.value_or("utf8");
  if (e != "utf8" && e != "base64") return InvalidParams("encoding", "encoding must be utf8 or base64");
  return e;
}

Result<std::string> DecodeBase64Data(std::string_view data) {
  std::optional<std::string> decoded = Base64Decode(data);
  if (!decoded) return InvalidParams("data", "data is not valid base64");
  return std::move(*decoded);
}

Result<std::string> SandboxId(const Params& params) {
  auto id = params.RequiredString("sandbox_id");
  if (!id.ok()) return id;
  if (id->empty()) return InvalidParams("sandbox_id", "sandbox_id must not be empty");
  return id;
}

}  // namespace abx::epp
