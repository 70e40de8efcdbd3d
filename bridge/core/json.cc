#include "bridge/core/json.h"

#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

#include <algorithm>
#include <cstring>
#include <vector>

namespace abx::core::json {

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

namespace {

// What JSON needs escaped, as RapidJSON's Writer escapes it (so the output is the same
// byte for byte): 0 = copied as is, 'u' = \u00XX, any other = a two-character escape.
constexpr char EscapeOf(unsigned char c) {
  return c == '\b'   ? 'b'
         : c == '\t' ? 't'
         : c == '\n' ? 'n'
         : c == '\f' ? 'f'
         : c == '\r' ? 'r'
         : c < 0x20   ? 'u'
         : c == '"'   ? '"'
         : c == '\\' ? '\\'
                      : 0;
}

// True when one of the 8 bytes of `word` may need escaping (a control character, '"'
// or '\\'); never false when one does. Lets the scan skip clean text 8 bytes at a time.
inline bool MayNeedEscape(uint64_t word) {
  constexpr uint64_t kOnes = 0x0101010101010101ULL;
  constexpr uint64_t kHigh = 0x8080808080808080ULL;
  auto has_zero = [](uint64_t v) { return ((v - kOnes) & ~v & kHigh) != 0; };
  const bool has_control = ((word - kOnes * 0x20) & ~word & kHigh) != 0;
  return has_control || has_zero(word ^ (kOnes * '"')) || has_zero(word ^ (kOnes * '\\'));
}

}  // namespace

void AppendQuoted(std::string* out, std::string_view text) {
  static const char kHex[] = "0123456789ABCDEF";
  // Most text needs no escape: one allocation for that case, growth only for escapes.
  out->reserve(out->size() + text.size() + 2);
  out->push_back('"');
  const char* p = text.data();
  const char* const end = p + text.size();
  const char* run = p;  // start of the bytes not yet copied
  while (p < end) {
    if (end - p >= 8) {
      uint64_t word;
      std::memcpy(&word, p, 8);
      if (!MayNeedEscape(word)) {
        p += 8;
        continue;
      }
    }
    const char* const stop = std::min(p + 8, end);
    for (; p < stop; ++p) {
      const unsigned char c = static_cast<unsigned char>(*p);
      const char escape = EscapeOf(c);
      if (escape == 0) continue;
      out->append(run, p);
      if (escape == 'u') {
        const char seq[6] = {'\\', 'u', '0', '0', kHex[c >> 4], kHex[c & 15]};
        out->append(seq, 6);
      } else {
        const char seq[2] = {'\\', escape};
        out->append(seq, 2);
      }
      run = p + 1;
    }
  }
  out->append(run, end);
  out->push_back('"');
}

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

}  // namespace abx::core::json
