#pragma once
// The typed front door as one unit for the daemon: the services of
// proto/{sandboxes,exec,files,ports,code,terminal,snapshots,templates,network}.proto, registered on the bridge's one gRPC server
// next to Bridge and EppSession, and their health-check entries.

#include <grpcpp/grpcpp.h>

#include "bridge/api/grpc/code_service.h"
#include "bridge/api/grpc/exec_service.h"
#include "bridge/api/grpc/files_service.h"
#include "bridge/api/grpc/network_service.h"
#include "bridge/api/grpc/ports_service.h"
#include "bridge/api/grpc/sandboxes_service.h"
#include "bridge/api/grpc/snapshots_service.h"
#include "bridge/api/grpc/templates_service.h"
#include "bridge/api/grpc/terminal_service.h"
#include "bridge/api/grpc/typed_call.h"

namespace abx::api {

class TypedServices {
 public:
  explicit TypedServices(const TypedDeps& deps)
      : sandboxes_(deps),
        exec_(deps),
        files_(deps),
        ports_(deps),
        code_(deps),
        terminals_(deps),
        snapshots_(deps),
        templates_(deps),
        network_(deps) {}

  // Must outlive the server built from `builder`.
  void RegisterWith(grpc::ServerBuilder* builder);
  // Reports each typed service SERVING on the server's health service (the server as a
  // whole, service name "", is SERVING by default). No-op without a health service.
  void MarkServing(grpc::Server* server);

 private:
  SandboxesService sandboxes_;
  ExecService exec_;
  FilesService files_;
  PortsService ports_;
  CodeService code_;
  TerminalService terminals_;
  SnapshotsService snapshots_;
  TemplatesService templates_;
  NetworkService network_;
};

}  // namespace abx::api
