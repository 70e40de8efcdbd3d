#include "bridge/api/grpc/typed_services.h"

#include <grpcpp/health_check_service_interface.h>

namespace abx::api {

void TypedServices::RegisterWith(grpc::ServerBuilder* builder) {
  builder->RegisterService(&sandboxes_);
  builder->RegisterService(&exec_);
  builder->RegisterService(&files_);
  builder->RegisterService(&ports_);
  builder->RegisterService(&code_);
  builder->RegisterService(&terminals_);
  builder->RegisterService(&snapshots_);
  builder->RegisterService(&templates_);
  builder->RegisterService(&network_);
}

void TypedServices::MarkServing(grpc::Server* server) {
  grpc::HealthCheckServiceInterface* health = server->GetHealthCheckService();
  if (!health) return;
  for (const char* name : {abx::opensandbox::v1::Sandboxes::service_full_name(),
                           abx::opensandbox::v1::Exec::service_full_name(),
                           abx::opensandbox::v1::Files::service_full_name(),
                           abx::opensandbox::v1::Ports::service_full_name(),
                           abx::opensandbox::v1::Code::service_full_name(),
                           abx::opensandbox::v1::Terminals::service_full_name(),
                           abx::opensandbox::v1::Snapshots::service_full_name(),
                           abx::opensandbox::v1::Templates::service_full_name(),
                           abx::opensandbox::v1::Network::service_full_name()}) {
    health->SetServingStatus(name, true);
  }
}

}  // namespace abx::api
