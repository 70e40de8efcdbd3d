#include "bridge/opensandbox/error_body.h"

#include <gtest/gtest.h>

namespace abx::opensandbox {
namespace {

TEST(ErrorBodyTest, HttpStatusesMapAsTheContractSays) {
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

TEST(ErrorBodyTest, NonApiBodiesAreE8010WhateverTheStatus) {
  EXPECT_EQ(FromHttpStatus(404, "<html>nginx</html>", "", "get").code, ErrorCode::kUpstream);
  EXPECT_EQ(FromHttpStatus(500, "Internal Server Error", "", "get").code, ErrorCode::kUpstream);
}

TEST(ErrorBodyTest, ReadsFastApiAndExecdShapes) {
  Error e = FromHttpStatus(422, R"({"detail":[{"type":"x","loc":["body"],"msg":"field required"}]})",
                           "", "create");
  EXPECT_NE(e.message.find("field required"), std::string::npos);
  Error a = FromHttpStatus(401, R"({"error":"Unauthorized: invalid or missing header X-EXECD-ACCESS-TOKEN"})",
                           "", "ping");
  EXPECT_EQ(a.code, ErrorCode::kAuth);
}

}  // namespace
}  // namespace abx::opensandbox
