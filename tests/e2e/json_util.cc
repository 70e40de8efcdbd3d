#include "tests/e2e/json_util.h"

#include <cstdlib>

#include "rapidjson/error/en.h"
#include "rapidjson/stringbuffer.h"
#include "rapidjson/writer.h"

namespace abx::e2e {

std::string ToJson(const rapidjson::Value& value) {
  rapidjson::StringBuffer buffer;
  rapidjson::Writer<rapidjson::StringBuffer> writer(buffer);
  value.Accept(writer);
  return std::string(buffer.GetString(), buffer.GetSize());
}

std::string JsonQuote(const std::string& text) {
  rapidjson::StringBuffer buffer;
  rapidjson::Writer<rapidjson::StringBuffer> writer(buffer);
  writer.String(text.data(), static_cast<rapidjson::SizeType>(text.size()));
  return std::string(buffer.GetString(), buffer.GetSize());
}

bool ParseJson(const std::string& text, rapidjson::Document* doc, std::string* error) {
  doc->Parse<rapidjson::kParseValidateEncodingFlag>(text.data(), text.size());
  if (doc->HasParseError()) {
    if (error) {
      *error = std::string(rapidjson::GetParseError_En(doc->GetParseError())) + " at offset " +
               std::to_string(doc->GetErrorOffset());
    }
    return false;
  }
  return true;
}

const rapidjson::Value* Find(const rapidjson::Value& value, const std::string& path) {
  const rapidjson::Value* current = &value;
  size_t start = 0;
  while (start <= path.size()) {
    size_t dot = path.find('.', start);
    std::string step = path.substr(start, dot == std::string::npos ? std::string::npos
                                                                   : dot - start);
    if (current->IsObject()) {
      auto it = current->FindMember(step.c_str());
      if (it == current->MemberEnd()) return nullptr;
      current = &it->value;
    } else if (current->IsArray()) {
      char* end = nullptr;
      unsigned long index = std::strtoul(step.c_str(), &end, 10);
      if (step.empty() || *end != '\0' || index >= current->Size()) return nullptr;
      current = &(*current)[static_cast<rapidjson::SizeType>(index)];
    } else {
      return nullptr;
    }
    if (dot == std::string::npos) break;
    start = dot + 1;
  }
  return current;
}

std::string GetString(const rapidjson::Value& value, const std::string& path,
                      const std::string& fallback) {
  const rapidjson::Value* v = Find(value, path);
  if (!v || !v->IsString()) return fallback;
  return std::string(v->GetString(), v->GetStringLength());
}

int64_t GetInt(const rapidjson::Value& value, const std::string& path, int64_t fallback) {
  const rapidjson::Value* v = Find(value, path);
  if (!v || !v->IsInt64()) return fallback;
  return v->GetInt64();
}

bool GetBool(const rapidjson::Value& value, const std::string& path, bool fallback) {
  const rapidjson::Value* v = Find(value, path);
  if (!v || !v->IsBool()) return fallback;
  return v->GetBool();
}

bool IsNull(const rapidjson::Value& value, const std::string& path) {
  const rapidjson::Value* v = Find(value, path);
  return v && v->IsNull();
}

std::vector<std::string> GetStrings(const rapidjson::Value& value, const std::string& path) {
  std::vector<std::string> out;
  const rapidjson::Value* v = Find(value, path);
  if (!v || !v->IsArray()) return out;
  for (const rapidjson::Value& item : v->GetArray()) {
    if (item.IsString()) out.emplace_back(item.GetString(), item.GetStringLength());
  }
  return out;
}

JsonObject& JsonObject::Raw(const std::string& key, const std::string& json) {
  if (!body_.empty()) body_ += ",";
  body_ += JsonQuote(key) + ":" + json;
  return *this;
}
JsonObject& JsonObject::Str(const std::string& key, const std::string& value) {
  return Raw(key, JsonQuote(value));
}
JsonObject& JsonObject::Int(const std::string& key, int64_t value) {
  return Raw(key, std::to_string(value));
}
JsonObject& JsonObject::Bool(const std::string& key, bool value) {
  return Raw(key, value ? "true" : "false");
}
JsonObject& JsonObject::Null(const std::string& key) { return Raw(key, "null"); }
std::string JsonObject::str() const { return "{" + body_ + "}"; }

std::string Abbreviate(const std::string& text, size_t max) {
  if (text.size() <= max) return text;
  return text.substr(0, max) + "... (" + std::to_string(text.size()) + " bytes)";
}

}  // namespace abx::e2e
