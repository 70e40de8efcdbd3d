#include "bridge/daemon/snapshot_command.h"

#include <cstdio>

#include <grpcpp/grpcpp.h>

#include "bridge/daemon/cli_bridge.h"
#include "bridge/daemon/cli_config.h"
#include "bridge/daemon/interrupt_cancels.h"
#include "proto/snapshots.grpc.pb.h"

namespace abx::daemon {
namespace {

namespace pb = abx::opensandbox::v1;

}  // namespace

int TakeSnapshot(const std::string& socket, const std::string& sandbox_id, const std::string& name) {
  InterruptCancels interrupts;  // ^C cancels the call; before gRPC starts its threads
  auto stub = pb::Snapshots::NewStub(grpc::CreateChannel("unix:" + socket, grpc::InsecureChannelCredentials()));
  pb::TakeSnapshotRequest request;
  *request.mutable_config() = ConfigFromEnvironment();
  request.set_sandbox_id(sandbox_id);
  request.set_name(name);
  grpc::ClientContext context;
  context.set_wait_for_ready(false);
  interrupts.Watch(&context);
  std::fprintf(stderr, "taking a snapshot of %s (waiting until it is Ready)...\n", sandbox_id.c_str());
  pb::Snapshot snapshot;
  const grpc::Status status = stub->Take(&context, request, &snapshot);
  interrupts.Done();
  if (!status.ok()) {
    std::fprintf(stderr, "snapshot failed: %s\n", CallError(status, socket).c_str());
    return 1;
  }
  std::fprintf(stderr, "snapshot %s of %s is %s%s\n", snapshot.id().c_str(), snapshot.sandbox_id().c_str(),
               snapshot.state().c_str(), snapshot.name().empty() ? "" : (" (" + snapshot.name() + ")").c_str());
  std::printf("%s\n", snapshot.id().c_str());
  return 0;
}

}  // namespace abx::daemon
