#pragma once
// Code: the typed code interpreter (proto/code.proto) over core::CodeInterpreter, the
// class EPP/1's code.* methods use.

#include "bridge/api/grpc/typed_call.h"
#include "bridge/api/grpc/typed_stream.h"
#include "proto/code.grpc.pb.h"

namespace abx::api {

class CodeService final : public abx::opensandbox::v1::Code::CallbackService {
 public:
  explicit CodeService(TypedDeps deps) : deps_(std::move(deps)) {}

  grpc::ServerUnaryReactor* CreateContext(grpc::CallbackServerContext* context,
                                          const abx::opensandbox::v1::CreateCodeContextRequest* request,
                                          abx::opensandbox::v1::CodeContext* reply) override;
  grpc::ServerUnaryReactor* ListContexts(grpc::CallbackServerContext* context,
                                         const abx::opensandbox::v1::ListCodeContextsRequest* request,
                                         abx::opensandbox::v1::ListCodeContextsReply* reply) override;
  grpc::ServerUnaryReactor* DeleteContext(grpc::CallbackServerContext* context,
                                          const abx::opensandbox::v1::DeleteCodeContextRequest* request,
                                          abx::opensandbox::v1::DeleteCodeContextReply* reply) override;
  grpc::ServerWriteReactor<abx::opensandbox::v1::CodeEvent>* Run(
      grpc::CallbackServerContext* context, const abx::opensandbox::v1::RunCodeRequest* request) override;

 private:
  const TypedDeps deps_;
};

}  // namespace abx::api
