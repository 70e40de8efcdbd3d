#pragma once

// The parts of gRPC's HTTP/2 protocol (grpc/doc/PROTOCOL-HTTP2.md) that are not HTTP/2:
// length-prefixed messages, status codes, the grpc-message and grpc-timeout headers.
// No I/O here; grpc_connection.h puts it on the wire.

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace abx::grpc_protocol {

// Status codes (grpc/include/grpc/impl/codegen/status.h).
enum Code : int {
  kOk = 0,
  kCancelled = 1,
  kUnknown = 2,
  kInvalidArgument = 3,
  kDeadlineExceeded = 4,
  kNotFound = 5,
  kPermissionDenied = 7,
  kResourceExhausted = 8,
  kUnimplemented = 12,
  kInternal = 13,
  kUnavailable = 14,
  kUnauthenticated = 16,
};

struct Status {
  int code = kOk;
  std::string message;
  bool ok() const { return code == kOk; }
};

// Every message travels as 1 flag byte (compressed or not) + 4-byte big-endian length.
inline constexpr size_t kMessagePrefixBytes = 5;
std::string MessagePrefix(size_t payload_size);

// The status a response gets when its HTTP status is not 200 (gRPC's mapping for
// responses without grpc-status).
int CodeForHttpStatus(int http_status);

// The grpc-timeout header's value for a deadline `timeout_ms` from now: at most 8 digits
// and a unit ("250m", "120S").
std::string TimeoutHeader(int64_t timeout_ms);

// Cuts a stream of DATA bytes into messages. Feed() calls `on_message` for each complete
// message, in order, with a view valid only during the call: into the fed bytes when a
// message lies whole in one chunk (no copy), else into an internal buffer that collects
// it. Returns false (with `*error`) on a compressed message (the shim never offers an
// encoding) or one over `max_message_bytes`; the stream is then unusable.
class MessageAssembler {
 public:
  explicit MessageAssembler(size_t max_message_bytes) : max_message_bytes_(max_message_bytes) {}

  template <typename OnMessage>
  bool Feed(const char* data, size_t size, OnMessage&& on_message, Status* error);

  // Forgets an incomplete message (a new call starts).
  void Reset() { std::string().swap(pending_); }

  // Bytes of an incomplete message held (prefix included); 0 between messages.
  size_t pending_bytes() const { return pending_.size(); }

 private:
  // Checks a complete prefix; sets `*payload_size`.
  bool ReadPrefix(const char* prefix, size_t* payload_size, Status* error) const;

  const size_t max_message_bytes_;
  std::string pending_;  // a message (prefix first) that is still incomplete
};

template <typename OnMessage>
bool MessageAssembler::Feed(const char* data, size_t size, OnMessage&& on_message,
                            Status* error) {
  while (size > 0) {
    if (pending_.empty()) {
      // Whole messages lying in the chunk are handed over where they lie.
      size_t payload_size;
      if (size >= kMessagePrefixBytes) {
        if (!ReadPrefix(data, &payload_size, error)) return false;
        if (size - kMessagePrefixBytes >= payload_size) {
          on_message(std::string_view(data + kMessagePrefixBytes, payload_size));
          data += kMessagePrefixBytes + payload_size;
          size -= kMessagePrefixBytes + payload_size;
          continue;
        }
        pending_.reserve(kMessagePrefixBytes + payload_size);
      }
      pending_.append(data, size);
      return true;
    }
    // Complete the prefix, then the payload.
    if (pending_.size() < kMessagePrefixBytes) {
      const size_t take = std::min(size, kMessagePrefixBytes - pending_.size());
      pending_.append(data, take);
      data += take;
      size -= take;
      if (pending_.size() < kMessagePrefixBytes) return true;
    }
    size_t payload_size;
    if (!ReadPrefix(pending_.data(), &payload_size, error)) return false;
    if (pending_.capacity() < kMessagePrefixBytes + payload_size) {
      pending_.reserve(kMessagePrefixBytes + payload_size);
    }
    const size_t missing = kMessagePrefixBytes + payload_size - pending_.size();
    const size_t take = std::min(size, missing);
    pending_.append(data, take);
    data += take;
    size -= take;
    if (take < missing) return true;
    on_message(std::string_view(pending_.data() + kMessagePrefixBytes, payload_size));
    // Keeps the capacity of an ordinary message for the next one; a huge one is freed.
    if (pending_.capacity() > (1u << 20)) {
      std::string().swap(pending_);
    } else {
      pending_.clear();
    }
  }
  return true;
}

}  // namespace abx::grpc_protocol
