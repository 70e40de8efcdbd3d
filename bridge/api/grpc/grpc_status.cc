#include "bridge/api/grpc/grpc_status.h"

#include <string>

#include "bridge/base/error_codes.h"

namespace abx::api {

grpc::Status ToGrpcStatus(const Error& error) {
  const std::string_view epp = EppCodeName(error.code);
  std::string message = error.message;
  if (!epp.empty()) message = std::string(epp) + ": " + message;
  return grpc::Status(static_cast<grpc::StatusCode>(GrpcCodeNumber(error.code)), message);
}

}  // namespace abx::api
