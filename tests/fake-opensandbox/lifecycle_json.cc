#include "tests/fake-opensandbox/lifecycle_json.h"

namespace fake_opensandbox {
namespace {

void WriteStatus(JsonWriter& w, const SandboxInfo& info) {
  w.Key("status");
  w.StartObject();
  w.Key("state");
  WriteString(w, info.state);
  if (!info.reason.empty()) {
    w.Key("reason");
    WriteString(w, info.reason);
  }
  if (!info.message.empty()) {
    w.Key("message");
    WriteString(w, info.message);
  }
  w.Key("lastTransitionAt");
  WriteString(w, FormatPydanticTime(info.last_transition_at));
  w.EndObject();
}

void WritePairs(JsonWriter& w, const StringPairs& pairs) {
  w.StartObject();
  for (const auto& [key, value] : pairs) {
    w.Key(key.c_str(), static_cast<rapidjson::SizeType>(key.size()));
    WriteString(w, value);
  }
  w.EndObject();
}

void WritePlatform(JsonWriter& w, const SandboxInfo& info) {
  if (!info.platform) return;
  w.Key("platform");
  w.StartObject();
  w.Key("os");
  WriteString(w, info.platform->first);
  w.Key("arch");
  WriteString(w, info.platform->second);
  w.EndObject();
}

void WriteStrings(JsonWriter& w, const std::vector<std::string>& items) {
  w.StartArray();
  for (const auto& item : items) WriteString(w, item);
  w.EndArray();
}

}  // namespace

void WriteString(JsonWriter& w, const std::string& s) {
  w.String(s.c_str(), static_cast<rapidjson::SizeType>(s.size()));
}

void WriteSandbox(JsonWriter& w, const SandboxInfo& info) {
  w.StartObject();
  w.Key("id");
  WriteString(w, info.id);
  if (info.image_uri) {
    w.Key("image");
    w.StartObject();
    w.Key("uri");
    WriteString(w, *info.image_uri);
    w.EndObject();
  }
  if (info.snapshot_id) {
    w.Key("snapshotId");
    WriteString(w, *info.snapshot_id);
  }
  WritePlatform(w, info);
  WriteStatus(w, info);
  if (!info.metadata.empty()) {  // Docker omits empty metadata
    w.Key("metadata");
    WritePairs(w, info.metadata);
  }
  w.Key("entrypoint");
  WriteStrings(w, info.entrypoint);
  if (info.expires_at) {
    w.Key("expiresAt");
    WriteString(w, FormatPydanticTime(*info.expires_at));
  }
  w.Key("createdAt");
  WriteString(w, FormatPydanticTime(info.created_at));
  w.EndObject();
}

std::string SandboxJson(const SandboxInfo& info) {
  rapidjson::StringBuffer buffer;
  JsonWriter w(buffer);
  WriteSandbox(w, info);
  return buffer.GetString();
}

std::string CreateResponseJson(const SandboxInfo& info, const CreateSpec& spec) {
  rapidjson::StringBuffer buffer;
  JsonWriter w(buffer);
  w.StartObject();
  w.Key("id");
  WriteString(w, info.id);
  WriteStatus(w, info);
  if (spec.metadata_given) {
    w.Key("metadata");
    WritePairs(w, spec.metadata);
  }
  WritePlatform(w, info);
  if (info.expires_at) {
    w.Key("expiresAt");
    WriteString(w, FormatPydanticTime(*info.expires_at));
  }
  w.Key("createdAt");
  WriteString(w, FormatPydanticTime(info.created_at));
  w.Key("entrypoint");
  WriteStrings(w, spec.entrypoint);
  w.EndObject();
  return buffer.GetString();
}

}  // namespace fake_opensandbox
