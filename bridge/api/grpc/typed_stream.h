#pragma once
// One server-streaming typed call (Exec.Start): what typed_call.h does for a unary call,
// plus a blocking Write for the body, which runs on the TaskRunner and writes as its
// events come (blocking_op.h: one message in flight, so a client that stops reading
// stops the body instead of growing a queue).

#include <grpcpp/grpcpp.h>

#include <functional>
#include <string>
#include <utility>

#include "bridge/api/grpc/blocking_op.h"
#include "bridge/api/grpc/typed_call.h"

namespace abx::api {

template <typename Message>
class StreamCallReactor final : public grpc::ServerWriteReactor<Message> {
 public:
  using Body = std::function<Status(TypedCall&, StreamCallReactor*)>;

  StreamCallReactor(const TypedDeps& deps, grpc::CallbackServerContext* context,
                    std::string method)
      : runner_(deps.runner), call_(deps, context, std::move(method)) {}

  // As UnaryCallReactor::Start; the body writes with Write.
  void Start(const google::protobuf::Map<std::string, std::string>* raw_config, Body body) {
    runner_->Run([this, raw_config, body = std::move(body)] {
      const Status status =
          RunTypedBody(call_, *raw_config, [&](TypedCall& call) { return body(call, this); });
      this->Finish(call_.Finish(status));
    });
  }

  // Sends one message and waits until gRPC has taken it. False once the client is gone.
  bool Write(const Message& message) {
    return writes_.Run([&] { this->StartWrite(&message); });
  }

  void OnWriteDone(bool ok) override { writes_.Done(ok); }
  void OnCancel() override { call_.cancel()->Cancel(); }
  void OnDone() override { delete this; }

 private:
  TaskRunner* const runner_;
  TypedCall call_;
  BlockingOp writes_;
};

// Serves one server-streaming typed call as Serve (typed_call.h) serves a unary one.
template <typename Message, typename Body>
grpc::ServerWriteReactor<Message>* ServeStream(
    const TypedDeps& deps, grpc::CallbackServerContext* context, const char* method,
    const google::protobuf::Map<std::string, std::string>& raw_config, Body body) {
  auto* reactor = new StreamCallReactor<Message>(deps, context, method);
  reactor->Start(&raw_config, typename StreamCallReactor<Message>::Body(std::move(body)));
  return reactor;
}

}  // namespace abx::api
