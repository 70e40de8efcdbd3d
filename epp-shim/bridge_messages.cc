#include "epp-shim/bridge_messages.h"

#include "epp-shim/proto_wire.h"

namespace abx {
namespace {

// Field numbers of proto/bridge.proto.
namespace hello_request {
constexpr uint32_t kBuildId = 1;
}
namespace hello_reply {
constexpr uint32_t kBuildId = 1;
constexpr uint32_t kVersion = 2;
constexpr uint32_t kPid = 3;
constexpr uint32_t kUptimeSeconds = 4;
}  // namespace hello_reply
namespace session_input {
constexpr uint32_t kStart = 1;
constexpr uint32_t kLine = 2;
constexpr uint32_t kOversized = 3;
constexpr uint32_t kLinePart = 4;
}  // namespace session_input
namespace session_start {
constexpr uint32_t kConfig = 1;
constexpr uint32_t kConfigSource = 2;
constexpr uint32_t kShimVersion = 3;
constexpr uint32_t kBuildId = 4;
constexpr uint32_t kShimPid = 5;
constexpr uint32_t kReplayInitialize = 6;
}  // namespace session_start
namespace oversized_line {
constexpr uint32_t kPrefix = 1;
constexpr uint32_t kLength = 2;
}  // namespace oversized_line
namespace session_output {
constexpr uint32_t kLine = 1;
constexpr uint32_t kResponseId = 2;
}  // namespace session_output
// Every map<K, V> entry is a message with the key as field 1 and the value as field 2.
constexpr uint32_t kMapKey = 1;
constexpr uint32_t kMapValue = 2;

// proto3 leaves fields at their default value out; so does this encoder.
void AppendStringIfSet(std::string* out, uint32_t field, std::string_view value) {
  if (!value.empty()) wire::AppendBytesField(out, field, value);
}

// Unlike other fields, a map entry's key and value are written even when empty (as the
// generated code does).
void AppendMap(std::string* out, uint32_t field, const std::map<std::string, std::string>& map) {
  std::string entry;
  for (const auto& [key, value] : map) {
    entry.clear();
    wire::AppendBytesField(&entry, kMapKey, key);
    wire::AppendBytesField(&entry, kMapValue, value);
    wire::AppendBytesField(out, field, entry);
  }
}

// Wraps `body` as the length-delimited field `field` of an outer message.
std::string Wrapped(uint32_t field, const std::string& body) {
  std::string out;
  out.reserve(body.size() + 6);
  wire::AppendBytesField(&out, field, body);
  return out;
}

}  // namespace

std::string EncodeHelloRequest(std::string_view build_id) {
  std::string out;
  AppendStringIfSet(&out, hello_request::kBuildId, build_id);
  return out;
}

bool DecodeHelloReply(std::string_view bytes, HelloReplyMessage* reply) {
  *reply = HelloReplyMessage();
  wire::Reader reader(bytes);
  wire::Field field;
  while (reader.Next(&field)) {
    const bool is_bytes = field.type == wire::kLengthDelimited;
    const bool is_varint = field.type == wire::kVarint;
    if (field.number == hello_reply::kBuildId && is_bytes) {
      reply->build_id.assign(field.bytes);
    } else if (field.number == hello_reply::kVersion && is_bytes) {
      reply->version.assign(field.bytes);
    } else if (field.number == hello_reply::kPid && is_varint) {
      reply->pid = static_cast<int32_t>(field.varint);  // int32: the low 32 bits
    } else if (field.number == hello_reply::kUptimeSeconds && is_varint) {
      reply->uptime_seconds = static_cast<int64_t>(field.varint);
    }
  }
  return reader.ok();
}

std::string EncodeSessionStart(const SessionStartMessage& start) {
  std::string body;
  AppendMap(&body, session_start::kConfig, start.config);
  AppendMap(&body, session_start::kConfigSource, start.config_source);
  AppendStringIfSet(&body, session_start::kShimVersion, start.shim_version);
  AppendStringIfSet(&body, session_start::kBuildId, start.build_id);
  if (start.shim_pid != 0) wire::AppendInt64Field(&body, session_start::kShimPid, start.shim_pid);
  AppendStringIfSet(&body, session_start::kReplayInitialize, start.replay_initialize);
  return Wrapped(session_input::kStart, body);
}

std::string SessionInputLineHeader(size_t line_size) {
  std::string out;
  wire::AppendTag(&out, session_input::kLine, wire::kLengthDelimited);
  wire::AppendVarint(&out, line_size);
  return out;
}

std::string SessionInputLinePartHeader(size_t part_size) {
  std::string out;
  wire::AppendTag(&out, session_input::kLinePart, wire::kLengthDelimited);
  wire::AppendVarint(&out, part_size);
  return out;
}

std::string EncodeOversizedLine(std::string_view prefix, int64_t length) {
  std::string body;
  AppendStringIfSet(&body, oversized_line::kPrefix, prefix);
  if (length != 0) wire::AppendInt64Field(&body, oversized_line::kLength, length);
  return Wrapped(session_input::kOversized, body);
}

bool DecodeSessionOutput(std::string_view bytes, std::string_view* line,
                         std::string_view* response_id) {
  *line = std::string_view();
  *response_id = std::string_view();
  wire::Reader reader(bytes);
  wire::Field field;
  while (reader.Next(&field)) {
    if (field.type != wire::kLengthDelimited) continue;
    if (field.number == session_output::kLine) {
      *line = field.bytes;
    } else if (field.number == session_output::kResponseId) {
      *response_id = field.bytes;
    }
  }
  return reader.ok();
}

}  // namespace abx
