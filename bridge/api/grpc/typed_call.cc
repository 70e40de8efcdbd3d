#include "bridge/api/grpc/typed_call.h"

#include <chrono>
#include <map>

#include "bridge/api/grpc/grpc_status.h"
#include "bridge/base/error_codes.h"
#include "bridge/base/log.h"
#include "common/config_fields.h"

namespace abx::api {
namespace {

// How often a call's client is checked for having gone away: the delay between a
// client's cancel and the core seeing it.
constexpr auto kClientPollInterval = std::chrono::milliseconds(50);

// Trailing metadata values must be printable ASCII; anything else is left out rather
// than mangled.
bool IsPrintableAscii(const std::string& text) {
  for (unsigned char c : text) {
    if (c < 0x20 || c > 0x7e) return false;
  }
  return !text.empty();
}

}  // namespace

ClientGoneWatcher::ClientGoneWatcher(grpc::ServerContext* context, CancelToken* token)
    : thread_([this, context, token] {
        std::unique_lock<std::mutex> lock(mu_);
        while (!cv_.wait_for(lock, kClientPollInterval, [this] { return done_; })) {
          if (context->IsCancelled()) {
            lock.unlock();
            token->Cancel();  // runs the core's hooks, e.g. interrupting a command
            return;
          }
        }
      }) {}

ClientGoneWatcher::~ClientGoneWatcher() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    done_ = true;
  }
  cv_.notify_all();
  thread_.join();
}

TypedCall::TypedCall(const TypedDeps& deps, grpc::ServerContext* context, std::string method)
    : core_(deps.core),
      admit_(deps.admit),
      context_(context),
      method_(std::move(method)),
      watcher_(context, &cancel_) {}

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

Result<std::string> Required(const std::string& value, const char* field) {
  if (value.empty()) return InvalidParams(field, std::string(field) + " is required");
  return value;
}

}  // namespace abx::api
