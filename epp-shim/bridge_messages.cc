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
constexpr uint32_t kLocalFileReply = 5;
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
constexpr uint32_t kLocalFile = 3;
}  // namespace session_output
namespace local_file_request {
constexpr uint32_t kKind = 1;
constexpr uint32_t kToken = 2;
constexpr uint32_t kLocalPath = 3;
constexpr uint32_t kRemoteName = 4;
constexpr uint32_t kOverwrite = 5;
constexpr uint32_t kSize = 6;
constexpr uint32_t kMode = 7;
constexpr uint32_t kMtimeUnixNs = 8;
constexpr uint32_t kDescriptorSocket = 9;
}  // namespace local_file_request
namespace local_file_reply {
constexpr uint32_t kToken = 1;
constexpr uint32_t kErrnoName = 2;
constexpr uint32_t kMessage = 3;
constexpr uint32_t kLocalPath = 4;
constexpr uint32_t kSize = 5;
constexpr uint32_t kMode = 6;
}  // namespace local_file_reply
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
                         std::string_view* response_id, std::string_view* local_file) {
  *line = std::string_view();
  *response_id = std::string_view();
  *local_file = std::string_view();
  wire::Reader reader(bytes);
  wire::Field field;
  while (reader.Next(&field)) {
    if (field.type != wire::kLengthDelimited) continue;
    if (field.number == session_output::kLine) {
      *line = field.bytes;
    } else if (field.number == session_output::kResponseId) {
      *response_id = field.bytes;
    } else if (field.number == session_output::kLocalFile) {
      *local_file = field.bytes;
    }
  }
  return reader.ok();
}

bool DecodeLocalFileRequest(std::string_view bytes, LocalFileRequestMessage* request) {
  *request = LocalFileRequestMessage();
  wire::Reader reader(bytes);
  wire::Field field;
  while (reader.Next(&field)) {
    if (field.type == wire::kVarint) {
      switch (field.number) {
        case local_file_request::kKind: request->kind = static_cast<int>(field.varint); break;
        case local_file_request::kOverwrite: request->overwrite = field.varint != 0; break;
        case local_file_request::kSize: request->size = static_cast<int64_t>(field.varint); break;
        case local_file_request::kMode: request->mode = static_cast<uint32_t>(field.varint); break;
        case local_file_request::kMtimeUnixNs: request->mtime_unix_ns = static_cast<int64_t>(field.varint); break;
        default: break;
      }
    } else if (field.type == wire::kLengthDelimited) {
      switch (field.number) {
        case local_file_request::kToken: request->token.assign(field.bytes); break;
        case local_file_request::kLocalPath: request->local_path.assign(field.bytes); break;
        case local_file_request::kRemoteName: request->remote_name.assign(field.bytes); break;
        case local_file_request::kDescriptorSocket: request->descriptor_socket.assign(field.bytes); break;
        default: break;
      }
    }
  }
  return reader.ok();
}

std::string EncodeLocalFileReply(const LocalFileReplyMessage& reply) {
  std::string body;
  AppendStringIfSet(&body, local_file_reply::kToken, reply.token);
  AppendStringIfSet(&body, local_file_reply::kErrnoName, reply.errno_name);
  AppendStringIfSet(&body, local_file_reply::kMessage, reply.message);
  AppendStringIfSet(&body, local_file_reply::kLocalPath, reply.local_path);
  if (reply.size != 0) wire::AppendInt64Field(&body, local_file_reply::kSize, reply.size);
  if (reply.mode != 0) wire::AppendInt64Field(&body, local_file_reply::kMode, reply.mode);
  return Wrapped(session_input::kLocalFileReply, body);
}

}  // namespace abx
