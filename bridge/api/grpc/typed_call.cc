#include "bridge/api/grpc/typed_call.h"

#include <map>

#include "bridge/api/grpc/grpc_status.h"
#include "bridge/base/error_codes.h"
#include "bridge/base/log.h"
#include "common/config_fields.h"

namespace abx::api {
namespace {

// Trailing metadata values must be printable ASCII; anything else is left out rather
// than mangled.
bool IsPrintableAscii(const std::string& text) {
  for (unsigned char c : text) {
    if (c < 0x20 || c > 0x7e) return false;
  }
  return !text.empty();
}

}  // namespace

TypedCall::TypedCall(const TypedDeps& deps, grpc::ServerContextBase* context,
                     std::string method)
    : core_(deps.core),
      admit_(deps.admit),
      context_(context),
      method_(std::move(method)) {}

Status TypedCall::Begin(const google::protobuf::Map<std::string, std::string>& raw_config) {
  core_->CountRequest();
  if (admit_) {
    lease_ = admit_();
    if (!lease_) {
      return MakeError(ErrorCode::kUnreachable,
                             "the bridge is draining and accepts no new calls");
    }
  }
  std::map<std::string, std::string> raw(raw_config.begin(), raw_config.end());
  // Registered before validation: a value that fails to parse may still be a real key.
  for (const config::Field& field : config::kFields) {
    auto it = raw.find(field.name);
    if (field.secret && it != raw.end()) log::RegisterSecret(it->second);
  }
  auto config = core::ParseConfig(raw);
  if (!config.ok()) {
    Error error = config.error();
    error.field = "config." + error.field;
    return error.Within(error.field);
  }
  config_ = std::move(config).value();
  upstream_ = core_->EndpointCacheFor(config_);
  return OkStatus();
}

grpc::Status TypedCall::Finish(const Status& status) {
  if (status.ok()) return grpc::Status::OK;
  Error error = status.error();
  error.message = log::Scrub(error.message);
  const std::string epp_code(EppCodeName(error.code));
  if (!epp_code.empty()) context_->AddTrailingMetadata("abx-epp-code", epp_code);
  if (IsPrintableAscii(error.field)) context_->AddTrailingMetadata("abx-field", error.field);
  if (error.http_status) {
    context_->AddTrailingMetadata("abx-http-status", std::to_string(error.http_status));
  }
  if (IsPrintableAscii(error.request_id)) {
    context_->AddTrailingMetadata("abx-request-id", error.request_id);
  }
  if (error.retryable) context_->AddTrailingMetadata("abx-retryable", "true");
  grpc::Status result = ToGrpcStatus(error);
  if (!context_->IsCancelled()) {
    log::Info(
        "typed.call_failed",
        {{"method", method_},
         {"code", epp_code.empty() ? std::to_string(JsonRpcCode(error.code)) : epp_code},
         {"error", error.message}});
  }
  return result;
}

Status RunTypedBody(TypedCall& call,
                    const google::protobuf::Map<std::string, std::string>& raw_config,
                    const TypedBody& body) {
  Status status = call.Begin(raw_config);
  if (status.ok()) status = body(call);
  return status;
}

UnaryCallReactor::UnaryCallReactor(const TypedDeps& deps, grpc::CallbackServerContext* context,
                                   std::string method)
    : runner_(deps.runner), call_(deps, context, std::move(method)) {}

void UnaryCallReactor::Start(const google::protobuf::Map<std::string, std::string>* raw_config,
                             TypedBody body) {
  // gRPC keeps a Finish that comes before the handler has returned this reactor, so the
  // body may finish at any time.
  runner_->Run([this, raw_config, body = std::move(body)] {
    Finish(call_.Finish(RunTypedBody(call_, *raw_config, body)));
  });
}

// On a gRPC thread: cancelling runs the core's hooks, which only post work (bridge/core/
// exec.cc interrupts a command in the background), so nothing here blocks.
void UnaryCallReactor::OnCancel() { call_.cancel()->Cancel(); }

void UnaryCallReactor::OnDone() { delete this; }

Result<std::string> Required(const std::string& value, const char* field) {
  if (value.empty()) return InvalidParams(field, std::string(field) + " is required");
  return value;
}

}  // namespace abx::api
