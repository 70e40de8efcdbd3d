#pragma once
// The EPP/1 front door: EppSession.Run carries one host session's lines both ways and
// hands them to an epp::Session over the shared core.

#include "bridge/api/grpc/serving_state.h"
#include "proto/bridge.grpc.pb.h"

namespace abx::api {

class EppSessionService final : public abx::opensandbox::v1::EppSession::Service {
 public:
  explicit EppSessionService(ServingState* state) : state_(state) {}

  grpc::Status Run(grpc::ServerContext* context,
                   grpc::ServerReaderWriter<abx::opensandbox::v1::SessionOutput,
                                            abx::opensandbox::v1::SessionInput>* stream) override;

 private:
  ServingState* state_;
};

}  // namespace abx::api
