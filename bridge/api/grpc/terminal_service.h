#pragma once
// Terminals: the typed terminals (proto/terminal.proto) over core::Terminals, the class
// EPP/1's pty.* methods use. Attach is a bidirectional stream whose body runs on the
// TaskRunner, reading the client's messages with blocking reads, while the terminal's
// delivery thread writes its events (blocking_op.h serialises the writes).

#include "bridge/api/grpc/typed_call.h"
#include "proto/terminal.grpc.pb.h"

namespace abx::api {

class TerminalService final : public abx::opensandbox::v1::Terminals::CallbackService {
 public:
  explicit TerminalService(TypedDeps deps) : deps_(std::move(deps)) {}

  grpc::ServerUnaryReactor* Open(grpc::CallbackServerContext* context,
                                 const abx::opensandbox::v1::OpenTerminalRequest* request,
                                 abx::opensandbox::v1::OpenTerminalReply* reply) override;
  grpc::ServerBidiReactor<abx::opensandbox::v1::TerminalInput, abx::opensandbox::v1::TerminalEvent>* Attach(
      grpc::CallbackServerContext* context) override;
  grpc::ServerUnaryReactor* Close(grpc::CallbackServerContext* context,
                                  const abx::opensandbox::v1::CloseTerminalRequest* request,
                                  abx::opensandbox::v1::CloseTerminalReply* reply) override;
  grpc::ServerUnaryReactor* List(grpc::CallbackServerContext* context,
                                 const abx::opensandbox::v1::ListTerminalsRequest* request,
                                 abx::opensandbox::v1::ListTerminalsReply* reply) override;

 private:
  const TypedDeps deps_;
};

}  // namespace abx::api
