#include "bridge/base/json.h"

#include "common/json_text.h"

#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

#include <algorithm>
#include <cstring>
#include <vector>


namespace abx::json {

std::string ToJson(const rapidjson::Value& value) {
  rapidjson::StringBuffer buffer;
  rapidjson::Writer<rapidjson::StringBuffer> writer(buffer);
  // An explicit stack of open containers instead of Value::Accept, which recurses once
  // per level: a host or a server can send values nested millions deep.
  struct Open {
    const rapidjson::Value* container;
    rapidjson::SizeType next;  // index of the next member or element to write
  };
  std::vector<Open> open;
  auto write = [&](const rapidjson::Value& v) {
    if (v.IsObject()) {
      writer.StartObject();
      open.push_back({&v, 0});
    } else if (v.IsArray()) {
      writer.StartArray();
      open.push_back({&v, 0});
    } else {
      v.Accept(writer);  // a scalar: no recursion
    }
  };
  write(value);
  while (!open.empty()) {
    const rapidjson::Value& container = *open.back().container;
    const rapidjson::SizeType index = open.back().next++;
    if (container.IsObject()) {
      if (index == container.MemberCount()) {
        writer.EndObject(index);
        open.pop_back();
        continue;
      }
      const auto& member = *(container.MemberBegin() + index);
      writer.Key(member.name.GetString(), member.name.GetStringLength());
      write(member.value);
    } else {
      if (index == container.Size()) {
        writer.EndArray(index);
        open.pop_back();
        continue;
      }
      write(container[index]);
    }
  }
  return std::string(buffer.GetString(), buffer.GetSize());
}

void AppendQuoted(std::string* out, std::string_view text) { AppendJsonQuoted(out, text); }

std::string Quote(std::string_view text) {
  std::string out;
  AppendQuoted(&out, text);
  return out;
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
  // The range first: casting a double outside int64's range (1e300) is undefined.
  if (v->IsDouble() && v->GetDouble() >= -9223372036854775808.0 &&
      v->GetDouble() < 9223372036854775808.0 &&
      v->GetDouble() == static_cast<double>(static_cast<int64_t>(v->GetDouble()))) {
    return static_cast<int64_t>(v->GetDouble());
  }
  return std::nullopt;
}

std::optional<bool> GetBool(const rapidjson::Value& object, const char* key) {
  const rapidjson::Value* v = GetMember(object, key);
  if (!v || !v->IsBool()) return std::nullopt;
  return v->GetBool();
}

}  // namespace abx::json
