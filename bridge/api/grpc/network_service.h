#pragma once
// Network: a sandbox's egress rules (proto/network.proto) over core::Network.

#include "bridge/api/grpc/typed_call.h"
#include "proto/network.grpc.pb.h"

namespace abx::api {

class NetworkService final : public abx::opensandbox::v1::Network::CallbackService {
 public:
  explicit NetworkService(TypedDeps deps) : deps_(std::move(deps)) {}

  grpc::ServerUnaryReactor* GetPolicy(grpc::CallbackServerContext* context,
                                      const abx::opensandbox::v1::GetNetworkPolicyRequest* request,
                                      abx::opensandbox::v1::NetworkPolicy* reply) override;
  grpc::ServerUnaryReactor* PatchPolicy(grpc::CallbackServerContext* context,
                                        const abx::opensandbox::v1::PatchNetworkPolicyRequest* request,
                                        abx::opensandbox::v1::NetworkPolicy* reply) override;
  grpc::ServerUnaryReactor* DeletePolicy(grpc::CallbackServerContext* context,
                                         const abx::opensandbox::v1::DeleteNetworkPolicyRequest* request,
                                         abx::opensandbox::v1::NetworkPolicy* reply) override;

 private:
  const TypedDeps deps_;
};

}  // namespace abx::api
