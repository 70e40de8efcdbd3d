#pragma once
// Bridge service: build handshake, stats, stop, the sandbox cache. No upstream traffic,
// no secrets.

#include "bridge/api/grpc/serving_state.h"
#include "proto/bridge.grpc.pb.h"

namespace abx::api {

class BridgeService final : public abx::opensandbox::v1::Bridge::Service {
 public:
  explicit BridgeService(ServingState* state) : state_(state) {}

  grpc::Status Hello(grpc::ServerContext*, const abx::opensandbox::v1::HelloRequest*,
                     abx::opensandbox::v1::HelloReply*) override;
  grpc::Status Stats(grpc::ServerContext*, const abx::opensandbox::v1::StatsRequest*,
                     abx::opensandbox::v1::StatsReply*) override;
  grpc::Status Stop(grpc::ServerContext*, const abx::opensandbox::v1::StopRequest*,
                    abx::opensandbox::v1::StopReply*) override;
  grpc::Status ListCachedSandboxes(grpc::ServerContext*,
                                   const abx::opensandbox::v1::ListCachedSandboxesRequest*,
                                   abx::opensandbox::v1::ListCachedSandboxesReply*) override;

 private:
  ServingState* state_;
};

// Peak resident set size of this process (VmHWM), in bytes.
int64_t PeakRssBytes();

}  // namespace abx::api
