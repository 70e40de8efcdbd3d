#pragma once
// JSON-RPC 2.0 envelopes as EPP/1 uses them: one compact object per line.

#include <memory>
#include <string>
#include <string_view>

#include <rapidjson/document.h>

#include "bridge/base/error.h"
#include "bridge/base/json.h"

namespace abx::epp {

struct Envelope {
  // Owns everything below, and the line: strings in the document point into it.
  std::shared_ptr<rapidjson::Document> doc;
  std::string method;
  bool has_id = false;     // false: a notification
  std::string id_json;     // compact JSON of the id ("7", "\"a\"", "null")
  const rapidjson::Value* params = nullptr;  // object, array, or null when absent
};

// Parses one line, in place: the envelope takes the line over. Errors are -32700 (not
// JSON, invalid UTF-8) or -32600 (not a request); `id_json` receives the id when it
// could be read, else "null".
Result<Envelope> ParseEnvelope(std::string line, std::string* id_json);

// Best effort: the id of a line that is too long or broken, read from its first bytes
// (an `"id":` member before any nesting). "null" when it cannot be read.
std::string RecoverId(std::string_view prefix);

std::string ResponseLine(const std::string& id_json, std::string_view result_json);
// A response built in place, for large results (files.read): `ResponseStart(id, n)` (with
// room for n more bytes), then the result value appended, then ResponseEnd.
std::string ResponseStart(const std::string& id_json, size_t result_size_hint);
void ResponseEnd(std::string* line);
std::string ErrorLine(const std::string& id_json, const Error& error);
std::string NotificationLine(std::string_view method, std::string_view params_json);
// A notification built in place, for large params: `NotificationStart(method, n)` (with
// room for n more bytes), then the params object appended, then NotificationEnd.
std::string NotificationStart(std::string_view method, size_t params_size_hint);
void NotificationEnd(std::string* line);

using json::Quote;
using json::ToJson;

}  // namespace abx::epp
