#include "bridge/base/error_codes.h"

namespace abx {
namespace {

struct Row {
  ErrorCode code;
  int json_rpc;
  std::string_view epp;
  int grpc;  // grpc::StatusCode's number
};

// clang-format off
constexpr Row kTable[] = {
    {ErrorCode::kNotInitialized, -32000, "E8001",  9 /* FAILED_PRECONDITION */},
    {ErrorCode::kUnreachable,    -32001, "E8002", 14 /* UNAVAILABLE */},
    {ErrorCode::kAuth,           -32002, "E8003",  7 /* PERMISSION_DENIED */},
    {ErrorCode::kUnsupported,    -32003, "E8004", 12 /* UNIMPLEMENTED */},
    {ErrorCode::kNotFound,       -32004, "E8005",  5 /* NOT_FOUND */},
    {ErrorCode::kTimeout,        -32005, "E8006",  4 /* DEADLINE_EXCEEDED */},
    {ErrorCode::kInvalidState,   -32006, "E8007",  9 /* FAILED_PRECONDITION */},
    {ErrorCode::kTooLarge,       -32007, "E8008",  8 /* RESOURCE_EXHAUSTED */},
    {ErrorCode::kCancelled,      -32008, "E8009",  1 /* CANCELLED */},
    {ErrorCode::kUpstream,       -32009, "E8010",  2 /* UNKNOWN */},
    {ErrorCode::kParse,          -32700, "",       3 /* INVALID_ARGUMENT */},
    {ErrorCode::kInvalidRequest, -32600, "",       3 /* INVALID_ARGUMENT */},
    {ErrorCode::kMethodNotFound, -32601, "",      12 /* UNIMPLEMENTED */},
    {ErrorCode::kInvalidParams,  -32602, "",       3 /* INVALID_ARGUMENT */},
};
// clang-format on

const Row& RowFor(ErrorCode code) {
  for (const Row& row : kTable) {
    if (row.code == code) return row;
  }
  return kTable[0];
}

}  // namespace

int JsonRpcCode(ErrorCode code) { return RowFor(code).json_rpc; }

std::string_view EppCodeName(ErrorCode code) { return RowFor(code).epp; }

int GrpcCodeNumber(ErrorCode code) { return RowFor(code).grpc; }

}  // namespace abx
