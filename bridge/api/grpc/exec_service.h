#pragma once
// Exec: commands in a sandbox (proto/exec.proto) over core::Exec, the same class the
// EPP/1 exec.* methods use. Start streams the command's events as the core reports
// them; Run collects them into one reply.

#include "bridge/api/grpc/typed_call.h"
#include "proto/exec.grpc.pb.h"

namespace abx::api {

class ExecService final : public abx::opensandbox::v1::Exec::Service {
 public:
  explicit ExecService(TypedDeps deps) : deps_(std::move(deps)) {}

  grpc::Status Run(grpc::ServerContext* context,
                   const abx::opensandbox::v1::RunCommandRequest* request,
                   abx::opensandbox::v1::RunCommandReply* reply) override;
  grpc::Status Start(grpc::ServerContext* context,
                     const abx::opensandbox::v1::StartCommandRequest* request,
                     grpc::ServerWriter<abx::opensandbox::v1::ExecEvent>* writer) override;
  grpc::Status Logs(grpc::ServerContext* context,
                    const abx::opensandbox::v1::ExecLogsRequest* request,
                    abx::opensandbox::v1::ExecLogsReply* reply) override;

 private:
  const TypedDeps deps_;
};

}  // namespace abx::api
