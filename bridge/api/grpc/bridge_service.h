#pragma once
// Bridge service: build handshake, stats, stop, the sandbox cache. No upstream traffic,
// no secrets, nothing that waits: each answer is made on the gRPC thread that asks.

#include "bridge/api/grpc/serving_state.h"
#include "proto/bridge.grpc.pb.h"

namespace abx::api {

class BridgeService final : public abx::opensandbox::v1::Bridge::CallbackService {
 public:
  explicit BridgeService(ServingState* state) : state_(state) {}

  grpc::ServerUnaryReactor* Hello(grpc::CallbackServerContext* context, const abx::opensandbox::v1::HelloRequest*,
                     abx::opensandbox::v1::HelloReply*) override;
  grpc::ServerUnaryReactor* Stats(grpc::CallbackServerContext* context, const abx::opensandbox::v1::StatsRequest*,
                     abx::opensandbox::v1::StatsReply*) override;
  grpc::ServerUnaryReactor* Stop(grpc::CallbackServerContext* context, const abx::opensandbox::v1::StopRequest*,
                    abx::opensandbox::v1::StopReply*) override;
  grpc::ServerUnaryReactor* ListCachedSandboxes(grpc::CallbackServerContext* context,
                                   const abx::opensandbox::v1::ListCachedSandboxesRequest*,
                                   abx::opensandbox::v1::ListCachedSandboxesReply*) override;

 private:
  ServingState* state_;
};

// Peak resident set size of this process (VmHWM), in bytes.
int64_t PeakRssBytes();

}  // namespace abx::api
