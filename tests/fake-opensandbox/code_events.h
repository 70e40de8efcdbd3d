#pragma once

// The events of a /code run as execd makes them from a Jupyter kernel's messages
// (docs/opensandbox.md §2.14): framing and key order as for commands
// (sse_events.h), Go's JSON (go_json.h), and execd's renames.

#include <cstdint>
#include <string>
#include <string_view>

#include "rapidjson/document.h"

namespace fake_opensandbox {

void AppendExecutionCountEvent(std::string* out, int64_t execution_count, int64_t timestamp_ms);
// `data` is the kernel's MIME bundle: keys sorted as a Go map's, "text/plain" renamed
// "text", values (strings, or JSON for application/json) as Go encodes them.
void AppendResultEvent(std::string* out, const rapidjson::Value& data, int64_t timestamp_ms);
// {"type":"status","text":"error"}: execd's one status event, sent before an error.
void AppendErrorStatusEvent(std::string* out, int64_t timestamp_ms);
// The kernel's error unchanged; `traceback` an array of strings, or null when the
// kernel sent none.
void AppendKernelErrorEvent(std::string* out, std::string_view ename, std::string_view evalue,
                            const rapidjson::Value* traceback, int64_t timestamp_ms);

// Any JSON value as Go re-encodes a decoded interface{}: objects with sorted keys.
void AppendGoJsonValue(std::string* out, const rapidjson::Value& value);

}  // namespace fake_opensandbox
