// TypedCall: what every typed call does around its core operation (admission, the
// configuration, the request counter, errors as gRPC statuses with EPP trailers).
#include "bridge/api/grpc/typed_call.h"

#include <grpcpp/test/server_context_test_spouse.h>

#include <map>
#include <memory>
#include <string>

#include "bridge/base/error.h"
#include "gtest/gtest.h"

namespace abx::api {
namespace {

using google::protobuf::Map;

Map<std::string, std::string> ConfigMap(const std::map<std::string, std::string>& fields) {
  Map<std::string, std::string> out;
  for (const auto& [name, value] : fields) out[name] = value;
  return out;
}

class TypedCallTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto core = core::BridgeCore::Create();
    ASSERT_TRUE(core.ok()) << core.error().message;
    core_ = std::move(core).value();
    deps_.core = core_.get();
  }

  std::multimap<std::string, std::string> Trailers() {
    return grpc::testing::ServerContextTestSpouse(&context_).GetTrailingMetadata();
  }
  std::string Trailer(const std::string& key) {
    auto trailers = Trailers();
    auto it = trailers.find(key);
    return it == trailers.end() ? "" : it->second;
  }

  std::unique_ptr<core::BridgeCore> core_;
  TypedDeps deps_;
  grpc::ServerContext context_;
};

TEST_F(TypedCallTest, ValidConfigurationGivesTheCallItsUpstream) {
  TypedCall call(deps_, &context_, "Test.Call");
  Status st =
      call.Begin(ConfigMap({{"base_url", "http://127.0.0.1:9"}, {"ready_timeout", "5"}}));
  ASSERT_TRUE(st.ok()) << st.error().message;
  EXPECT_EQ(call.config().lifecycle_url, "http://127.0.0.1:9/v1");
  EXPECT_EQ(call.config().ready_timeout_s, 5);
  EXPECT_NE(call.upstream(), nullptr);
  EXPECT_FALSE(call.cancel()->cancelled());
  EXPECT_TRUE(call.Finish(st).ok());
  EXPECT_TRUE(Trailers().empty());
}

TEST_F(TypedCallTest, BadConfigurationFieldIsInvalidArgumentNamingIt) {
  TypedCall call(deps_, &context_, "Test.Call");
  Status st = call.Begin(ConfigMap({{"ready_timeout", "abc"}}));
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.error().code, ErrorCode::kInvalidParams);
  EXPECT_EQ(st.error().field, "config.ready_timeout");
  grpc::Status status = call.Finish(st);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(status.error_message().rfind("config.ready_timeout: ", 0), 0u)
      << status.error_message();
  EXPECT_EQ(Trailer("abx-field"), "config.ready_timeout");
  EXPECT_EQ(Trailer("abx-epp-code"), "");  // JSON-RPC's own code: no EPP code
}

TEST_F(TypedCallTest, UnknownConfigurationFieldIsRefused) {
  TypedCall call(deps_, &context_, "Test.Call");
  Status st = call.Begin(ConfigMap({{"base_url", "http://127.0.0.1:9"}, {"bogus", "1"}}));
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.error().field, "config.bogus");
}

TEST_F(TypedCallTest, DrainingBridgeRefusesTheCallAsUnavailable) {
  deps_.admit = [] { return std::shared_ptr<void>(); };
  TypedCall call(deps_, &context_, "Test.Call");
  Status st = call.Begin(ConfigMap({}));
  ASSERT_FALSE(st.ok());
  grpc::Status status = call.Finish(st);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::UNAVAILABLE);
  EXPECT_EQ(status.error_message().rfind("E8002: ", 0), 0u) << status.error_message();
  EXPECT_EQ(Trailer("abx-epp-code"), "E8002");
}

TEST_F(TypedCallTest, LeaseIsHeldForTheWholeCall) {
  bool released = false;
  deps_.admit = [&released] {
    return std::shared_ptr<void>(new int(0), [&released](void* p) {
      delete static_cast<int*>(p);
      released = true;
    });
  };
  {
    TypedCall call(deps_, &context_, "Test.Call");
    ASSERT_TRUE(call.Begin(ConfigMap({})).ok());
    EXPECT_FALSE(released);
  }
  EXPECT_TRUE(released);
}

TEST_F(TypedCallTest, EveryCallIsCounted) {
  const int64_t before = core_->counters().requests_total;
  {
    TypedCall call(deps_, &context_, "Test.Call");
    call.Begin(ConfigMap({}));
  }
  {
    grpc::ServerContext other;
    TypedCall call(deps_, &other, "Test.Call");
    call.Begin(ConfigMap({{"ready_timeout", "bad"}}));  // refused calls count too
  }
  EXPECT_EQ(core_->counters().requests_total - before, 2);
}

TEST_F(TypedCallTest, ErrorsCarryTheirDetailsAndNoSecret) {
  const std::string key = "typed-call-test-secret-4711";
  TypedCall call(deps_, &context_, "Test.Call");
  ASSERT_TRUE(call.Begin(ConfigMap({{"api_key", key}})).ok());
  Error error = MakeError(ErrorCode::kUpstream, "the server said " + key);
  error.http_status = 503;
  error.request_id = "req-42";
  error.retryable = true;
  grpc::Status status = call.Finish(error);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::UNKNOWN);
  EXPECT_EQ(status.error_message().find(key), std::string::npos) << status.error_message();
  EXPECT_EQ(status.error_message().rfind("E8010: ", 0), 0u) << status.error_message();
  EXPECT_EQ(Trailer("abx-epp-code"), "E8010");
  EXPECT_EQ(Trailer("abx-http-status"), "503");
  EXPECT_EQ(Trailer("abx-request-id"), "req-42");
  EXPECT_EQ(Trailer("abx-retryable"), "true");
}

TEST_F(TypedCallTest, UnprintableRequestIdIsLeftOut) {
  TypedCall call(deps_, &context_, "Test.Call");
  ASSERT_TRUE(call.Begin(ConfigMap({})).ok());
  Error error = MakeError(ErrorCode::kNotFound, "gone");
  error.request_id = "bad\r\nid";
  call.Finish(error);
  EXPECT_EQ(Trailers().count("abx-request-id"), 0u);
  EXPECT_EQ(Trailer("abx-epp-code"), "E8005");
}

TEST_F(TypedCallTest, TheBodyRunsOnlyAfterAGoodBegin) {
  bool ran = false;
  TypedCall refused(deps_, &context_, "Test.Call");
  Status status = RunTypedBody(refused, ConfigMap({{"protocol", "gopher"}}),
                               [&](TypedCall&) -> Status {
                                 ran = true;
                                 return OkStatus();
                               });
  EXPECT_FALSE(ran);
  EXPECT_EQ(refused.Finish(status).error_code(), grpc::StatusCode::INVALID_ARGUMENT);

  grpc::ServerContext other;
  TypedCall admitted(deps_, &other, "Test.Call");
  status = RunTypedBody(admitted, ConfigMap({}), [&](TypedCall&) -> Status {
    ran = true;
    return InvalidParams("sandbox_id", "sandbox_id is required");
  });
  EXPECT_TRUE(ran);
  EXPECT_EQ(admitted.Finish(status).error_code(), grpc::StatusCode::INVALID_ARGUMENT);
}

TEST(RequiredTest, EmptyIsInvalidParamsNamingTheField) {
  auto missing = Required("", "sandbox_id");
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.error().field, "sandbox_id");
  auto present = Required("sbx-1", "sandbox_id");
  ASSERT_TRUE(present.ok());
  EXPECT_EQ(*present, "sbx-1");
}

}  // namespace
}  // namespace abx::api
