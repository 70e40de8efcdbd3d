#pragma once

// What the shim needs to know about an EPP/1 line, without building a document: whether
// it is a request (a `method` and an `id`) or a notification, its method name, and the
// compact JSON text of its top-level `id` (e.g. `7` or `"a"`), which is how the shim
// tracks requests that still await their response. Only the top level is looked at.

#include <string>

namespace abx {

struct LineMeta {
  enum class Kind {
    kRequest,       // a JSON object with a string `method` and an `id`
    kNotification,  // a JSON object with a string `method` and no `id`
    kOther,         // anything else (not JSON, not an object, a response, ...)
  };
  Kind kind = Kind::kOther;
  std::string method;   // when `method` is a string
  std::string id_json;  // when kind is kRequest: the id as compact JSON text
  bool has_result = false;  // a top-level `result` member (a success response)
  bool has_error = false;   // a top-level `error` member
};

// Reads a whole line. A line that is not valid JSON is kOther.
LineMeta ParseLineMeta(const std::string& line);

// Reads the first bytes of a line too long to keep, as the bridge does: a top-level `id`
// that is complete before the cut and comes before any nested object or array makes
// the line kRequest (method or not), since the bridge answers it by that id.
LineMeta ParseLinePrefixMeta(const std::string& prefix);

// `id_json` written as JSON text in the way the bridge writes response ids: the value
// parsed and written back compactly (so `1.0` and `"\u0061"` come out as `1.0`, `"a"`).
// Empty when `json` is not a JSON string, number or null.
std::string CanonicalIdJson(const std::string& json);

// {"jsonrpc":"2.0","id":<id_json>,"error":{"code":-32001,"message":<message>,
//  "data":{"epp_code":"E8002","retryable":true}}}; id `null` when id_json is empty.
std::string BridgeUnreachableResponse(const std::string& id_json, const std::string& message);

}  // namespace abx
