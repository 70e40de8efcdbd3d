#pragma once

// The messages of proto/bridge.proto that the shim sends and receives, encoded and
// decoded with the small codec of proto_wire.h. Field numbers are those of the .proto;
// //tests/epp-shim:bridge_messages_test round-trips every one against the generated
// classes (unknown fields and map entries included), so a change of the .proto that
// this file misses fails there.
//
// Decoders follow protobuf's rules: fields in any order, the last occurrence of a
// singular field wins, unknown fields are skipped, a field of an unexpected wire type
// is skipped as unknown. They fail only on malformed input.

#include <cstdint>
#include <map>
#include <string>
#include <string_view>

namespace abx {

// SessionStart (SessionInput field 1).
struct SessionStartMessage {
  std::map<std::string, std::string> config;         // holds secrets: never logged
  std::map<std::string, std::string> config_source;
  std::string shim_version;
  std::string build_id;
  int32_t shim_pid = 0;
  std::string replay_initialize;
};

// Bridge.Hello's reply.
struct HelloReplyMessage {
  std::string build_id;
  std::string version;
  int32_t pid = 0;
  int64_t uptime_seconds = 0;
};

// HelloRequest.
std::string EncodeHelloRequest(std::string_view build_id);
bool DecodeHelloReply(std::string_view bytes, HelloReplyMessage* reply);

// SessionInput{start}.
std::string EncodeSessionStart(const SessionStartMessage& start);

// SessionInput{line}: the bytes that precede the line itself (tag and length), so a
// line of up to 8 MiB is queued as it is, without being copied into a message.
std::string SessionInputLineHeader(size_t line_size);

// SessionInput{line_part}: the same for the first bytes of a long line still being read.
std::string SessionInputLinePartHeader(size_t part_size);

// SessionInput{oversized}.
std::string EncodeOversizedLine(std::string_view prefix, int64_t length);

// SessionOutput. `line`, `response_id` and `local_file` (a LocalFileRequest's bytes,
// empty when there is none) are views into `bytes`.
bool DecodeSessionOutput(std::string_view bytes, std::string_view* line,
                         std::string_view* response_id, std::string_view* local_file);

// LocalFileRequest (files.transfer; the kinds as in the .proto).
struct LocalFileRequestMessage {
  static constexpr int kOpenForDownload = 1;
  static constexpr int kOpenForUpload = 2;
  static constexpr int kCommit = 3;
  static constexpr int kDiscard = 4;
  int kind = 0;
  std::string token;
  std::string local_path;
  std::string remote_name;
  bool overwrite = false;
  int64_t size = 0;
  uint32_t mode = 0;
  int64_t mtime_unix_ns = 0;
  std::string descriptor_socket;
};
bool DecodeLocalFileRequest(std::string_view bytes, LocalFileRequestMessage* request);

// SessionInput{local_file_reply}.
struct LocalFileReplyMessage {
  std::string token;
  std::string errno_name;
  std::string message;
  std::string local_path;
  int64_t size = 0;
  uint32_t mode = 0;
};
std::string EncodeLocalFileReply(const LocalFileReplyMessage& reply);

}  // namespace abx
