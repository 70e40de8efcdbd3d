#pragma once
// Exec: commands in a sandbox (proto/exec.proto) over core::Exec, the same class the
// EPP/1 exec.* methods use. Start streams the command's events as the core reports
// them; Run collects them into one reply; Interact streams them too and feeds the
// command's stdin from the call (exec_interact.h). Shells over core::Shells, as EPP's shell.*;
// WriteStdin over core::ProcessStdin, as EPP's process.stdin.

#include "bridge/api/grpc/typed_call.h"
#include "proto/exec.grpc.pb.h"

namespace abx::api {

class ExecService final : public abx::opensandbox::v1::Exec::CallbackService {
 public:
  explicit ExecService(TypedDeps deps) : deps_(std::move(deps)) {}

  grpc::ServerUnaryReactor* Run(grpc::CallbackServerContext* context,
                   const abx::opensandbox::v1::RunCommandRequest* request,
                   abx::opensandbox::v1::RunCommandReply* reply) override;
  grpc::ServerWriteReactor<abx::opensandbox::v1::ExecEvent>* Start(
      grpc::CallbackServerContext* context,
      const abx::opensandbox::v1::StartCommandRequest* request) override;
  grpc::ServerBidiReactor<abx::opensandbox::v1::ExecInput, abx::opensandbox::v1::ExecEvent>* Interact(
      grpc::CallbackServerContext* context) override;
  grpc::ServerUnaryReactor* Logs(grpc::CallbackServerContext* context,
                    const abx::opensandbox::v1::ExecLogsRequest* request,
                    abx::opensandbox::v1::ExecLogsReply* reply) override;
  grpc::ServerUnaryReactor* CreateShell(grpc::CallbackServerContext* context,
                                        const abx::opensandbox::v1::CreateShellRequest* request,
                                        abx::opensandbox::v1::CreateShellReply* reply) override;
  grpc::ServerUnaryReactor* CloseShell(grpc::CallbackServerContext* context,
                                       const abx::opensandbox::v1::CloseShellRequest* request,
                                       abx::opensandbox::v1::CloseShellReply* reply) override;
  grpc::ServerUnaryReactor* WriteStdin(grpc::CallbackServerContext* context,
                                       const abx::opensandbox::v1::WriteStdinRequest* request,
                                       abx::opensandbox::v1::WriteStdinReply* reply) override;

 private:
  const TypedDeps deps_;
};

}  // namespace abx::api
