#pragma once

// Lifecycle response bodies (docs/opensandbox.md §1.4): pydantic field order, null fields omitted,
// UTC timestamps with microseconds only when non-zero.

#include <string>
#include <vector>

#include "rapidjson/stringbuffer.h"
#include "rapidjson/writer.h"
#include "tests/fake-opensandbox/create_request.h"
#include "tests/fake-opensandbox/sandbox_registry.h"

namespace fake_opensandbox {

using JsonWriter = rapidjson::Writer<rapidjson::StringBuffer>;

// GET /sandboxes/{id}, list items, PATCH metadata.
void WriteSandbox(JsonWriter& w, const SandboxInfo& info);
std::string SandboxJson(const SandboxInfo& info);
// POST /sandboxes (202): no image, metadata echoed as sent.
std::string CreateResponseJson(const SandboxInfo& info, const CreateSpec& spec);

void WriteString(JsonWriter& w, const std::string& s);

}  // namespace fake_opensandbox
