#pragma once
// What every call of the typed front door (Sandboxes, Exec, Files, Ports) does around
// its core operation, in one place: admission (a draining bridge refuses new calls),
// the request counter, the caller's configuration (validated like an EPP session's,
// secrets registered for log scrubbing), cancellation when the client goes away, and
// the error as a gRPC status with the EPP details in trailing metadata.
//
// The services use gRPC's callback API. A call's body may block for minutes (waiting
// for a sandbox, following a command's output), so it runs on the daemon's TaskRunner,
// not on a gRPC thread; the reactor's OnCancel (the client cancelled, went away, or its
// deadline passed) cancels the call's CancelToken at once, and the core then does what
// $/cancel does in EPP (a half-made sandbox is killed, a command is interrupted).
// Nothing polls.

#include <google/protobuf/map.h>
#include <grpcpp/grpcpp.h>

#include <functional>
#include <memory>
#include <string>

#include "bridge/base/cancel.h"
#include "bridge/base/error.h"
#include "bridge/base/task_runner.h"
#include "bridge/core/bridge_core.h"
#include "bridge/core/config.h"
#include "bridge/core/endpoint_cache.h"

namespace abx::api {

// What the typed services need from the daemon.
struct TypedDeps {
  core::BridgeCore* core = nullptr;
  // Runs the calls' bodies (the daemon's request pool: never queues).
  TaskRunner* runner = nullptr;
  // Admits one call: the returned lease is held until the call ends (the daemon counts
  // it like a session, so it neither idles out nor ends a drain under a running call).
  // Null: refused, the bridge is draining. Unset: every call is admitted.
  std::function<std::shared_ptr<void>()> admit;
};

// The state of one typed call; lives in its reactor.
class TypedCall {
 public:
  // `method` names the call in logs, e.g. "Sandboxes.Create".
  TypedCall(const TypedDeps& deps, grpc::ServerContextBase* context, std::string method);
  TypedCall(const TypedCall&) = delete;
  TypedCall& operator=(const TypedCall&) = delete;

  // Admits the call and validates the caller's configuration (field → raw text, as an
  // EPP shim sends it in SessionStart). A bad field is INVALID_ARGUMENT naming it as
  // "config.<field>". Nothing else of the call may run before this succeeds.
  Status Begin(const google::protobuf::Map<std::string, std::string>& raw_config);

  const core::ProviderConfig& config() const { return config_; }
  core::EndpointCache* upstream() const { return upstream_.get(); }
  const std::shared_ptr<core::EndpointCache>& shared_upstream() const { return upstream_; }
  core::BridgeCore* core() const { return core_; }
  CancelToken* cancel() { return &cancel_; }
  grpc::ServerContextBase* context() const { return context_; }

  // The call's final status: OK, or the error mapped by ToGrpcStatus (message
  // prefixed with the EPP code, secrets scrubbed) with trailing metadata
  // abx-epp-code, abx-field, abx-http-status, abx-request-id and abx-retryable where
  // the error has them.
  grpc::Status Finish(const Status& status);

 private:
  core::BridgeCore* core_;
  std::function<std::shared_ptr<void>()> admit_;
  grpc::ServerContextBase* context_;
  const std::string method_;
  std::shared_ptr<void> lease_;
  core::ProviderConfig config_;
  std::shared_ptr<core::EndpointCache> upstream_;
  CancelToken cancel_;
};

using TypedBody = std::function<Status(TypedCall&)>;

// Begin with `raw_config`, then `body` only if Begin succeeded: the call's outcome.
Status RunTypedBody(TypedCall& call,
                    const google::protobuf::Map<std::string, std::string>& raw_config,
                    const TypedBody& body);

// One unary typed call. Deletes itself when gRPC is done with it.
class UnaryCallReactor final : public grpc::ServerUnaryReactor {
 public:
  UnaryCallReactor(const TypedDeps& deps, grpc::CallbackServerContext* context,
                   std::string method);

  // Runs the body on the TaskRunner and finishes the call with its outcome. The request
  // (and `raw_config` in it) and the reply live until then.
  void Start(const google::protobuf::Map<std::string, std::string>* raw_config, TypedBody body);

  void OnCancel() override;
  void OnDone() override;

 private:
  TaskRunner* const runner_;
  TypedCall call_;
};

// Serves one unary typed call: Begin with `raw_config`, then `body(call)` (returning a
// Status) on the TaskRunner, then Finish. The body fills the reply itself; it runs after
// the handler has returned, so it captures the request and reply pointers by value.
template <typename Body>
grpc::ServerUnaryReactor* Serve(const TypedDeps& deps, grpc::CallbackServerContext* context,
                                const char* method,
                                const google::protobuf::Map<std::string, std::string>& raw_config,
                                Body body) {
  auto* reactor = new UnaryCallReactor(deps, context, method);
  reactor->Start(&raw_config, TypedBody(std::move(body)));
  return reactor;
}

// Request checks shared by the services: a required, non-empty string field.
Result<std::string> Required(const std::string& value, const char* field);

}  // namespace abx::api
