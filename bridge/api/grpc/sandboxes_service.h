#pragma once
// Sandboxes: the typed sandbox lifecycle (proto/sandboxes.proto) over core::Sandboxes,
// the same class the EPP/1 sandbox.* methods use, and GetMetrics over core::Metrics.

#include "bridge/api/grpc/typed_call.h"
#include "proto/sandboxes.grpc.pb.h"

namespace abx::api {

class SandboxesService final : public abx::opensandbox::v1::Sandboxes::CallbackService {
 public:
  explicit SandboxesService(TypedDeps deps) : deps_(std::move(deps)) {}

  grpc::ServerUnaryReactor* Create(grpc::CallbackServerContext* context,
                      const abx::opensandbox::v1::CreateSandboxRequest* request,
                      abx::opensandbox::v1::Sandbox* reply) override;
  grpc::ServerUnaryReactor* Connect(grpc::CallbackServerContext* context,
                       const abx::opensandbox::v1::ConnectSandboxRequest* request,
                       abx::opensandbox::v1::Sandbox* reply) override;
  grpc::ServerUnaryReactor* Get(grpc::CallbackServerContext* context,
                   const abx::opensandbox::v1::GetSandboxRequest* request,
                   abx::opensandbox::v1::Sandbox* reply) override;
  grpc::ServerUnaryReactor* List(grpc::CallbackServerContext* context,
                    const abx::opensandbox::v1::ListSandboxesRequest* request,
                    abx::opensandbox::v1::ListSandboxesReply* reply) override;
  grpc::ServerUnaryReactor* Kill(grpc::CallbackServerContext* context,
                    const abx::opensandbox::v1::KillSandboxRequest* request,
                    abx::opensandbox::v1::KillSandboxReply* reply) override;
  grpc::ServerUnaryReactor* SetTimeout(grpc::CallbackServerContext* context,
                          const abx::opensandbox::v1::SetSandboxTimeoutRequest* request,
                          abx::opensandbox::v1::SetSandboxTimeoutReply* reply) override;
  grpc::ServerUnaryReactor* Pause(grpc::CallbackServerContext* context,
                     const abx::opensandbox::v1::PauseSandboxRequest* request,
                     abx::opensandbox::v1::Sandbox* reply) override;
  grpc::ServerUnaryReactor* Resume(grpc::CallbackServerContext* context,
                      const abx::opensandbox::v1::ResumeSandboxRequest* request,
                      abx::opensandbox::v1::Sandbox* reply) override;
  grpc::ServerUnaryReactor* GetMetrics(grpc::CallbackServerContext* context,
                                       const abx::opensandbox::v1::GetSandboxMetricsRequest* request,
                                       abx::opensandbox::v1::SandboxMetrics* reply) override;
  grpc::ServerUnaryReactor* PoolStatus(grpc::CallbackServerContext* context,
                                       const abx::opensandbox::v1::PoolStatusRequest* request,
                                       abx::opensandbox::v1::PoolStatusReply* reply) override;
  grpc::ServerUnaryReactor* SetMetadata(grpc::CallbackServerContext* context,
                                        const abx::opensandbox::v1::SetSandboxMetadataRequest* request,
                                        abx::opensandbox::v1::Sandbox* reply) override;

 private:
  const TypedDeps deps_;
};

}  // namespace abx::api
