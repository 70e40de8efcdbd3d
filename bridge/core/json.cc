#include "bridge/core/json.h"

#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

namespace abx::core::json {

std::string ToJson(const rapidjson::Value& value) {
  rapidjson::StringBuffer buffer;
  rapidjson::Writer<rapidjson::StringBuffer> writer(buffer);
  value.Accept(writer);
  return std::string(buffer.GetString(), buffer.GetSize());
}

std::string Quote(std::string_view text) {
  rapidjson::StringBuffer buffer;
  rapidjson::Writer<rapidjson::StringBuffer> writer(buffer);
  writer.String(text.data(), static_cast<rapidjson::SizeType>(text.size()));
  return std::string(buffer.GetString(), buffer.GetSize());
}

std::string ObjectOfStrings(const std::map<std::string, std::string>& map) {
  std::string out = "{";
  for (const auto& [k, v] : map) {
    if (out.size() > 1) out += ",";
    out += Quote(k) + ":" + Quote(v);
  }
  return out + "}";
}

std::string ArrayOfStrings(const std::vector<std::string>& items) {
  std::string out = "[";
  for (const auto& item : items) {
    if (out.size() > 1) out += ",";
    out += Quote(item);
  }
  return out + "]";
}

const rapidjson::Value* GetMember(const rapidjson::Value& object, const char* key) {
  if (!object.IsObject()) return nullptr;
  auto it = object.FindMember(key);
  return it == object.MemberEnd() ? nullptr : &it->value;
}

std::optional<std::string> GetString(const rapidjson::Value& object, const char* key) {
  const rapidjson::Value* v = GetMember(object, key);
  if (!v || !v->IsString()) return std::nullopt;
  return std::string(v->GetString(), v->GetStringLength());
}

std::optional<int64_t> GetInt(const rapidjson::Value& object, const char* key) {
  const rapidjson::Value* v = GetMember(object, key);
  if (!v) return std::nullopt;
  if (v->IsInt64()) return v->GetInt64();
  if (v->IsDouble() && v->GetDouble() == static_cast<double>(static_cast<int64_t>(v->GetDouble()))) {
    return static_cast<int64_t>(v->GetDouble());
  }
  return std::nullopt;
}

std::optional<bool> GetBool(const rapidjson::Value& object, const char* key) {
  const rapidjson::Value* v = GetMember(object, key);
  if (!v || !v->IsBool()) return std::nullopt;
  return v->GetBool();
}

}  // namespace abx::core::json
