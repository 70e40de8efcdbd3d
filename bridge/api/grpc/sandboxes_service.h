#pragma once
// Sandboxes: the typed sandbox lifecycle (proto/sandboxes.proto) over core::Sandboxes,
// the same class the EPP/1 sandbox.* methods use.

#include "bridge/api/grpc/typed_call.h"
#include "proto/sandboxes.grpc.pb.h"

namespace abx::api {

class SandboxesService final : public abx::opensandbox::v1::Sandboxes::Service {
 public:
  explicit SandboxesService(TypedDeps deps) : deps_(std::move(deps)) {}

  grpc::Status Create(grpc::ServerContext* context,
                      const abx::opensandbox::v1::CreateSandboxRequest* request,
                      abx::opensandbox::v1::Sandbox* reply) override;
  grpc::Status Connect(grpc::ServerContext* context,
                       const abx::opensandbox::v1::ConnectSandboxRequest* request,
                       abx::opensandbox::v1::Sandbox* reply) override;
  grpc::Status Get(grpc::ServerContext* context,
                   const abx::opensandbox::v1::GetSandboxRequest* request,
                   abx::opensandbox::v1::Sandbox* reply) override;
  grpc::Status List(grpc::ServerContext* context,
                    const abx::opensandbox::v1::ListSandboxesRequest* request,
                    abx::opensandbox::v1::ListSandboxesReply* reply) override;
  grpc::Status Kill(grpc::ServerContext* context,
                    const abx::opensandbox::v1::KillSandboxRequest* request,
                    abx::opensandbox::v1::KillSandboxReply* reply) override;
  grpc::Status SetTimeout(grpc::ServerContext* context,
                          const abx::opensandbox::v1::SetSandboxTimeoutRequest* request,
                          abx::opensandbox::v1::SetSandboxTimeoutReply* reply) override;
  grpc::Status Pause(grpc::ServerContext* context,
                     const abx::opensandbox::v1::PauseSandboxRequest* request,
                     abx::opensandbox::v1::Sandbox* reply) override;
  grpc::Status Resume(grpc::ServerContext* context,
                      const abx::opensandbox::v1::ResumeSandboxRequest* request,
                      abx::opensandbox::v1::Sandbox* reply) override;

 private:
  const TypedDeps deps_;
};

}  // namespace abx::api
