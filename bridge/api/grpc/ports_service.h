#pragma once
// Ports: the URL of a sandbox's port (proto/ports.proto) over the lifecycle API's
// endpoint lookup (core::Ports).

#include "bridge/api/grpc/typed_call.h"
#include "proto/ports.grpc.pb.h"

namespace abx::api {

class PortsService final : public abx::opensandbox::v1::Ports::CallbackService {
 public:
  explicit PortsService(TypedDeps deps) : deps_(std::move(deps)) {}

  grpc::ServerUnaryReactor* Url(grpc::CallbackServerContext* context,
                   const abx::opensandbox::v1::PortUrlRequest* request,
                   abx::opensandbox::v1::PortUrlReply* reply) override;

 private:
  const TypedDeps deps_;
};

}  // namespace abx::api
