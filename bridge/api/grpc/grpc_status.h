#pragma once
// An Error as the gRPC status the typed services and the bridge's own services answer:
// the nearest status code (bridge/base/error_codes.h) and the EPP code in the message
// prefix ("E8005: …"), so tooling can tell E8007 from E8001 although both are
// FAILED_PRECONDITION.

#include <grpcpp/support/status.h>

#include "bridge/base/error.h"

namespace abx::api {

grpc::Status ToGrpcStatus(const Error& error);

}  // namespace abx::api
