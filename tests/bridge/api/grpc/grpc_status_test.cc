#include "bridge/api/grpc/grpc_status.h"

#include <gtest/gtest.h>

namespace abx::api {
namespace {

TEST(GrpcStatusTest, GrpcStatusCarriesTheEppCode) {
  grpc::Status s = ToGrpcStatus(MakeError(ErrorCode::kNotFound, "no such sandbox"));
  EXPECT_EQ(s.error_code(), grpc::StatusCode::NOT_FOUND);
  EXPECT_EQ(s.error_message(), "E8005: no such sandbox");
}

TEST(GrpcStatusTest, JsonRpcCodesHaveNoEppPrefix) {
  grpc::Status s = ToGrpcStatus(InvalidParams("path", "path: must be absolute"));
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(s.error_message(), "path: must be absolute");
}

}  // namespace
}  // namespace abx::api
