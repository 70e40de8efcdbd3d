#pragma once
// The one mapping table of error codes: EPP code <-> JSON-RPC code <-> gRPC status code.
// How an upstream HTTP answer becomes an Error is OpenSandbox's business
// (bridge/opensandbox/error_body.h); the gRPC status object is made at the gRPC edge
// (bridge/api/grpc/grpc_status.h) from the number this table gives.

#include <string>
#include <string_view>

#include "bridge/base/error.h"

namespace abx {

// JSON-RPC error code the host sees: -32000 - (NN - 1) for E80NN, JSON-RPC's own otherwise.
int JsonRpcCode(ErrorCode code);

// "E8001" … "E8010"; empty for JSON-RPC's own codes (-32700 … -32602).
std::string_view EppCodeName(ErrorCode code);

// The nearest gRPC status code, as its number (the numbering of grpc::StatusCode and
// google.rpc.Code, fixed by the gRPC protocol), so this table needs no gRPC headers.
int GrpcCodeNumber(ErrorCode code);

}  // namespace abx
