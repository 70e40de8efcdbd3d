#pragma once
// The EPP/1 front door: EppSession.Run carries one host session's lines both ways and
// hands them to an epp::Session over the shared core.
//
// Each call gets a thread of the request pool for its read loop (a line's work may
// block, and gRPC's callback threads must not); the reactor's OnCancel tells the session
// its host is gone the moment gRPC knows it, so nothing polls.

#include "bridge/api/grpc/serving_state.h"
#include "proto/bridge.grpc.pb.h"

namespace abx::api {

class EppSessionService final : public abx::opensandbox::v1::EppSession::CallbackService {
 public:
  explicit EppSessionService(ServingState* state) : state_(state) {}

  grpc::ServerBidiReactor<abx::opensandbox::v1::SessionInput,
                          abx::opensandbox::v1::SessionOutput>*
  Run(grpc::CallbackServerContext* context) override;

 private:
  ServingState* state_;
};

}  // namespace abx::api
