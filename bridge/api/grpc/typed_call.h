#pragma once
// What every call of the typed front door (Sandboxes, Exec, Files, Ports) does around
// its core operation, in one place: admission (a draining bridge refuses new calls),
// the request counter, the caller's configuration (validated like an EPP session's,
// secrets registered for log scrubbing), cancellation when the client goes away, and
// the error as a gRPC status with the EPP details in trailing metadata.
//
// The services are written against the gRPC sync API, like the rest of the bridge. The
// sync API has no "call cancelled" callback, and the handler's thread is busy inside
// the core (waiting for a sandbox, following a command's output), so a small watcher
// thread per call polls ServerContext::IsCancelled and cancels the call's CancelToken:
// the core then does what $/cancel does in EPP (a half-made sandbox is killed, a
// command is interrupted).

#include <google/protobuf/map.h>
#include <grpcpp/grpcpp.h>

#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "bridge/base/cancel.h"
#include "bridge/base/error.h"
#include "bridge/core/bridge_core.h"
#include "bridge/core/config.h"
#include "bridge/core/endpoint_cache.h"

namespace abx::api {

// What the typed services need from the daemon.
struct TypedDeps {
  core::BridgeCore* core = nullptr;
  // Admits one call: the returned lease is held until the call ends (the daemon counts
  // it like a session, so it neither idles out nor ends a drain under a running call).
  // Null: refused, the bridge is draining. Unset: every call is admitted.
  std::function<std::shared_ptr<void>()> admit;
};

// Cancels `token` once the call's client cancels it, goes away, or its deadline
// passes; stops watching when destroyed.
class ClientGoneWatcher {
 public:
  ClientGoneWatcher(grpc::ServerContext* context, CancelToken* token);
  ~ClientGoneWatcher();
  ClientGoneWatcher(const ClientGoneWatcher&) = delete;
  ClientGoneWatcher& operator=(const ClientGoneWatcher&) = delete;

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  bool done_ = false;
  std::thread thread_;
};

// The state of one typed call; lives on the handler's stack.
class TypedCall {
 public:
  // `method` names the call in logs, e.g. "Sandboxes.Create".
  TypedCall(const TypedDeps& deps, grpc::ServerContext* context, std::string method);
  TypedCall(const TypedCall&) = delete;
  TypedCall& operator=(const TypedCall&) = delete;

  // Admits the call and validates the caller's configuration (field → raw text, as an
  // EPP shim sends it in SessionStart). A bad field is INVALID_ARGUMENT naming it as
  // "config.<field>". Nothing else of the call may run before this succeeds.
  Status Begin(const google::protobuf::Map<std::string, std::string>& raw_config);

  const core::ProviderConfig& config() const { return config_; }
  core::EndpointCache* upstream() const { return upstream_.get(); }
  core::BridgeCore* core() const { return core_; }
  CancelToken* cancel() { return &cancel_; }
  grpc::ServerContext* context() const { return context_; }

  // The call's final status: OK, or the error mapped by ToGrpcStatus (message
  // prefixed with the EPP code, secrets scrubbed) with trailing metadata
  // abx-epp-code, abx-field, abx-http-status, abx-request-id and abx-retryable where
  // the error has them.
  grpc::Status Finish(const Status& status);

 private:
  core::BridgeCore* core_;
  std::function<std::shared_ptr<void>()> admit_;
  grpc::ServerContext* context_;
  const std::string method_;
  std::shared_ptr<void> lease_;
  core::ProviderConfig config_;
  std::shared_ptr<core::EndpointCache> upstream_;
  CancelToken cancel_;
  ClientGoneWatcher watcher_;  // last: stops before the token it cancels goes away
};

// Runs one typed call: Begin with `raw_config`, then `body(call)` (returning a
// Status), then Finish. The body fills the reply itself.
template <typename Body>
grpc::Status Serve(const TypedDeps& deps, grpc::ServerContext* context, const char* method,
                   const google::protobuf::Map<std::string, std::string>& raw_config, Body&& body) {
  TypedCall call(deps, context, method);
  Status status = call.Begin(raw_config);
  if (status.ok()) status = body(call);
  return call.Finish(status);
}

// Request checks shared by the services: a required, non-empty string field.
Result<std::string> Required(const std::string& value, const char* field);

}  // namespace abx::api
