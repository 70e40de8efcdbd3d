#include "bridge/http/transport_error.h"

namespace abx::http {

const char* TransportErrorKindName(TransportErrorKind kind) {
  switch (kind) {
    case TransportErrorKind::kUnreachable:
      return "unreachable";
    case TransportErrorKind::kTimeout:
      return "timeout";
    case TransportErrorKind::kCancelled:
      return "cancelled";
    case TransportErrorKind::kBrokenStream:
      return "broken_stream";
    case TransportErrorKind::kOther:
      return "other";
  }
  return "other";
}

}  // namespace abx::http
