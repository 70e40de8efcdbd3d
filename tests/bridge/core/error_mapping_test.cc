#include "bridge/core/error_mapping.h"

#include <gtest/gtest.h>

namespace abx::core {
namespace {

TEST(ErrorMappingTest, EppCodesFollowTheFormula) {
  EXPECT_EQ(JsonRpcCode(ErrorCode::kNotInitialized), -32000);
  EXPECT_EQ(JsonRpcCode(ErrorCode::kUpstream), -32009);
  EXPECT_EQ(EppCodeName(ErrorCode::kTooLarge), "E8008");
  EXPECT_EQ(JsonRpcCode(ErrorCode::kParse), -32700);
  EXPECT_EQ(EppCodeName(ErrorCode::kParse), "");
}

TEST(ErrorMappingTest, HttpStatusesMapAsTheContractSays) {
  const char* body = R"({"code":"DOCKER::SANDBOX_NOT_FOUND","message":"Sandbox x not found."})";
  EXPECT_EQ(FromHttpStatus(401, body, "", "get").code, ErrorCode::kAuth);
  EXPECT_EQ(FromHttpStatus(403, body, "", "get").code, ErrorCode::kAuth);
  EXPECT_EQ(FromHttpStatus(404, body, "", "get").code, ErrorCode::kNotFound);
  EXPECT_EQ(FromHttpStatus(409, body, "", "get").code, ErrorCode::kInvalidState);
  Error e = FromHttpStatus(503, body, "req-1", "get");
  EXPECT_EQ(e.code, ErrorCode::kUpstream);
  EXPECT_EQ(e.http_status, 503);
  EXPECT_EQ(e.request_id, "req-1");
  EXPECT_TRUE(e.retryable);
  EXPECT_NE(e.message.find("DOCKER::SANDBOX_NOT_FOUND"), std::string::npos);
}

TEST(ErrorMappingTest, NonApiBodiesAreE8010WhateverTheStatus) {
  EXPECT_EQ(FromHttpStatus(404, "<html>nginx</html>", "", "get").code, ErrorCode::kUpstream);
  EXPECT_EQ(FromHttpStatus(500, "Internal Server Error", "", "get").code, ErrorCode::kUpstream);
}

TEST(ErrorMappingTest, ReadsFastApiAndExecdShapes) {
  Error e = FromHttpStatus(422, R"({"detail":[{"type":"x","loc":["body"],"msg":"field required"}]})",
                           "", "create");
  EXPECT_NE(e.message.find("field required"), std::string::npos);
  Error a = FromHttpStatus(401, R"({"error":"Unauthorized: invalid or missing header X-EXECD-ACCESS-TOKEN"})",
                           "", "ping");
  EXPECT_EQ(a.code, ErrorCode::kAuth);
}

TEST(ErrorMappingTest, GrpcStatusCarriesTheEppCode) {
  grpc::Status s = ToGrpcStatus(MakeError(ErrorCode::kNotFound, "no such sandbox"));
  EXPECT_EQ(s.error_code(), grpc::StatusCode::NOT_FOUND);
  EXPECT_EQ(s.error_message(), "E8005: no such sandbox");
}

}  // namespace
}  // namespace abx::core
