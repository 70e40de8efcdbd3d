#pragma once

// JSON helpers for the end-to-end tests (RapidJSON): reading fields by dotted path and
// writing request params without hand-escaping.

#include <cstdint>
#include <string>
#include <vector>

#include "rapidjson/document.h"

namespace abx::e2e {

// Compact JSON text of a value.
std::string ToJson(const rapidjson::Value& value);
// A JSON string literal, quotes included: JsonQuote("a\"b") == "\"a\\\"b\"".
std::string JsonQuote(const std::string& text);
// Parses one JSON document (UTF-8 validated, nothing after it). False with a message
// naming the offset on error.
bool ParseJson(const std::string& text, rapidjson::Document* doc, std::string* error);

// The member at a dotted path ("error.data.epp_code"; a number picks an array element:
// "sandboxes.0.id"), or null when any step is missing. A key that holds a dot
// ("process.manage") needs FindMember instead.
const rapidjson::Value* Find(const rapidjson::Value& value, const std::string& path);
// The value at `path` when it has that type, else `fallback`.
std::string GetString(const rapidjson::Value& value, const std::string& path,
                      const std::string& fallback = "");
int64_t GetInt(const rapidjson::Value& value, const std::string& path, int64_t fallback = 0);
bool GetBool(const rapidjson::Value& value, const std::string& path, bool fallback = false);
// True when `path` exists and holds JSON null.
bool IsNull(const rapidjson::Value& value, const std::string& path);
// The strings of the array at `path` (non-strings skipped); empty when it is no array.
std::vector<std::string> GetStrings(const rapidjson::Value& value, const std::string& path);

// Builds a JSON object text for request params:
//   JsonObject().Str("sandbox_id", id).Str("command", "echo hi").Int("timeout", 5).str()
class JsonObject {
 public:
  JsonObject& Str(const std::string& key, const std::string& value);
  JsonObject& Int(const std::string& key, int64_t value);
  JsonObject& Bool(const std::string& key, bool value);
  JsonObject& Null(const std::string& key);
  // `json` is inserted verbatim (an array, an object, ...).
  JsonObject& Raw(const std::string& key, const std::string& json);
  std::string str() const;

 private:
  std::string body_;
};

// `text` cut to `max` bytes with a note of its full size, for failure messages.
std::string Abbreviate(const std::string& text, size_t max);

}  // namespace abx::e2e
