#include "bridge/base/error_codes.h"

#include <gtest/gtest.h>

namespace abx {
namespace {

TEST(ErrorCodesTest, EppCodesFollowTheFormula) {
  EXPECT_EQ(JsonRpcCode(ErrorCode::kNotInitialized), -32000);
  EXPECT_EQ(JsonRpcCode(ErrorCode::kUpstream), -32009);
  EXPECT_EQ(EppCodeName(ErrorCode::kTooLarge), "E8008");
  EXPECT_EQ(JsonRpcCode(ErrorCode::kParse), -32700);
  EXPECT_EQ(EppCodeName(ErrorCode::kParse), "");
}

TEST(ErrorCodesTest, EveryCodeHasTheNearestGrpcStatus) {
  EXPECT_EQ(GrpcCodeNumber(ErrorCode::kNotFound), 5);        // NOT_FOUND
  EXPECT_EQ(GrpcCodeNumber(ErrorCode::kUnreachable), 14);    // UNAVAILABLE
  EXPECT_EQ(GrpcCodeNumber(ErrorCode::kInvalidState), 9);    // FAILED_PRECONDITION
  EXPECT_EQ(GrpcCodeNumber(ErrorCode::kInvalidParams), 3);   // INVALID_ARGUMENT
}

}  // namespace
}  // namespace abx
