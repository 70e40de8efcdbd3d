#pragma once
// The one mapping table: EPP error <-> JSON-RPC code <-> gRPC status <-> upstream HTTP.

#include <string>
#include <string_view>

#include <grpcpp/support/status.h>

#include "bridge/core/error.h"

namespace abx::core {

// JSON-RPC error code the host sees: -32000 - (NN - 1) for E80NN, JSON-RPC's own otherwise.
int JsonRpcCode(ErrorCode code);

// "E8001" … "E8010"; empty for JSON-RPC's own codes (-32700 … -32602).
std::string_view EppCodeName(ErrorCode code);

// An upstream answer that was not a success, from the lifecycle server or execd.
// `body` is the raw body; its `{code,message}`, FastAPI `{"detail":…}` or execd
// `{"error":…}` shape is read for the message. `what` names the operation for context.
Error FromHttpStatus(int http_status, std::string_view body, std::string request_id,
                     std::string_view what);

// The same error as a gRPC status for the typed front door; the EPP code travels in the
// message prefix ("E8005: …") and the status code is the nearest gRPC one.
grpc::Status ToGrpcStatus(const Error& error);

}  // namespace abx::core
