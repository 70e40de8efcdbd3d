#pragma once
// OpenSandbox's error answers: the lifecycle server's `{code,message}`, FastAPI's
// `{"detail":…}` and execd's `{"error":…}`, read into the bridge's Error with the EPP code
// their HTTP status stands for.

#include <string>
#include <string_view>

#include "bridge/base/error.h"

namespace abx::opensandbox {

// An upstream answer that was not a success, from the lifecycle server or execd.
// `body` is the raw body; whichever of the shapes above it has is read for the message.
// `what` names the operation for context.
Error FromHttpStatus(int http_status, std::string_view body, std::string request_id,
                     std::string_view what);

// gin's plain "404 page not found" (no API body, so FromHttpStatus made it E8010): the
// route itself is missing, which is an execd from before that route's release.
inline bool IsRouteMissing(const Error& e) {
  return e.http_status == 404 && e.code == ErrorCode::kUpstream;
}

}  // namespace abx::opensandbox
