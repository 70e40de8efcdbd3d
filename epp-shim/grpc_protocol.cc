#include "epp-shim/grpc_protocol.h"

#include <algorithm>

namespace abx::grpc_protocol {

std::string MessagePrefix(size_t payload_size) {
  const uint32_t size = static_cast<uint32_t>(payload_size);
  const char prefix[kMessagePrefixBytes] = {
      0,  // not compressed
      static_cast<char>(size >> 24), static_cast<char>(size >> 16),
      static_cast<char>(size >> 8), static_cast<char>(size)};
  return std::string(prefix, kMessagePrefixBytes);
}

int CodeForHttpStatus(int http_status) {
  switch (http_status) {
    case 400: return kInternal;
    case 401: return kUnauthenticated;
    case 403: return kPermissionDenied;
    case 404: return kUnimplemented;
    case 429:
    case 502:
    case 503:
    case 504: return kUnavailable;
    default: return kUnknown;
  }
}

std::string TimeoutHeader(int64_t timeout_ms) {
  timeout_ms = std::max<int64_t>(timeout_ms, 1);
  // Milliseconds while they fit in 8 digits, then whole seconds (rounded up).
  if (timeout_ms < 100000000) return std::to_string(timeout_ms) + "m";
  return std::to_string(std::min<int64_t>((timeout_ms + 999) / 1000, 99999999)) + "S";
}

bool MessageAssembler::ReadPrefix(const char* prefix, size_t* payload_size, Status* error) const {
  const uint8_t flags = static_cast<uint8_t>(prefix[0]);
  if (flags != 0) {
    error->code = kInternal;
    error->message = flags == 1 ? "the bridge sent a compressed message, which was never offered"
                                : "the bridge sent a message with unknown flags";
    return false;
  }
  const uint32_t size = (static_cast<uint32_t>(static_cast<uint8_t>(prefix[1])) << 24) |
                        (static_cast<uint32_t>(static_cast<uint8_t>(prefix[2])) << 16) |
                        (static_cast<uint32_t>(static_cast<uint8_t>(prefix[3])) << 8) |
                        static_cast<uint32_t>(static_cast<uint8_t>(prefix[4]));
  if (size > max_message_bytes_) {
    error->code = kResourceExhausted;
    error->message = "the bridge sent a message of " + std::to_string(size) +
                     " bytes, over the limit of " + std::to_string(max_message_bytes_);
    return false;
  }
  *payload_size = size;
  return true;
}

}  // namespace abx::grpc_protocol
