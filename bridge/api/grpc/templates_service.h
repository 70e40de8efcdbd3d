#pragma once
// Templates: the typed templates (proto/templates.proto) over core::Templates, the class
// the EPP/1 templates.build, templates.list and templates.delete use. A build's files
// come as bytes in the request, so the bridge opens no local path for it.

#include "bridge/api/grpc/typed_call.h"
#include "bridge/api/grpc/typed_stream.h"
#include "proto/templates.grpc.pb.h"

namespace abx::api {

class TemplatesService final : public abx::opensandbox::v1::Templates::CallbackService {
 public:
  explicit TemplatesService(TypedDeps deps) : deps_(std::move(deps)) {}

  grpc::ServerWriteReactor<abx::opensandbox::v1::BuildTemplateEvent>* Build(
      grpc::CallbackServerContext* context, const abx::opensandbox::v1::BuildTemplateRequest* request) override;
  grpc::ServerUnaryReactor* List(grpc::CallbackServerContext* context,
                                 const abx::opensandbox::v1::ListTemplatesRequest* request,
                                 abx::opensandbox::v1::ListTemplatesReply* reply) override;
  grpc::ServerUnaryReactor* Delete(grpc::CallbackServerContext* context,
                                   const abx::opensandbox::v1::DeleteTemplateRequest* request,
                                   abx::opensandbox::v1::DeleteTemplateReply* reply) override;

 private:
  TypedDeps deps_;
};

}  // namespace abx::api
