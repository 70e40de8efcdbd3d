#pragma once

// pydantic's field checks as the lifecycle server's request models apply them: each adds
// FastAPI-style 422 problems (lifecycle_errors.h) for the value at a location and returns
// true when the value was valid. Shared by the create request and its volumes.

#include <cctype>
#include <cmath>
#include <regex>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "rapidjson/document.h"
#include "tests/fake-opensandbox/lifecycle_errors.h"

namespace fake_opensandbox {

using StringPairs = std::vector<std::pair<std::string, std::string>>;

namespace pydantic {

using Loc = ValidationErrors::Loc;
using rapidjson::Value;

inline Loc Append(Loc loc, std::variant<std::string, int> part) {
  loc.push_back(std::move(part));
  return loc;
}

inline const Value* Member(const Value& object, const char* name) {
  auto it = object.FindMember(name);
  if (it == object.MemberEnd()) return nullptr;
  return &it->value;
}

// Absent or null (Optional fields accept both).
inline bool IsUnset(const Value* v) { return v == nullptr || v->IsNull(); }

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

inline bool IsBlank(const std::string& s) {
  for (char c : s) {
    if (!isspace(static_cast<unsigned char>(c))) return false;
  }
  return true;
}

}  // namespace pydantic
}  // namespace fake_opensandbox
