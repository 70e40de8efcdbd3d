#pragma once
// The EPP/1 front door: EppSession.Run carries one host session's lines both ways and
// hands them to an epp::Session over the shared core.

#include "bridge/daemon_state.h"
#include "proto/bridge.grpc.pb.h"

namespace abx::bridge {

class EppSessionService final : public abx::opensandbox::v1::EppSession::Service {
 public:
  explicit EppSessionService(DaemonState* state) : state_(state) {}

  grpc::Status Run(grpc::ServerContext* context,
                   grpc::ServerReaderWriter<abx::opensandbox::v1::SessionOutput,
                                            abx::opensandbox::v1::SessionInput>* stream) override;

 private:
  DaemonState* state_;
};

}  // namespace abx::bridge
