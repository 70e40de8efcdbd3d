#include "bridge/daemon/snapshot_command.h"

#include <pthread.h>
#include <signal.h>

#include <atomic>
#include <cstdio>
#include <thread>

#include <grpcpp/grpcpp.h>

#include "bridge/daemon/cli_config.h"
#include "proto/snapshots.grpc.pb.h"

namespace abx::daemon {
namespace {

namespace pb = abx::opensandbox::v1;

}  // namespace

int TakeSnapshot(const std::string& socket, const std::string& sandbox_id, const std::string& name) {
  // ^C cancels the call: SIGINT is blocked here, before gRPC starts its threads, and one
  // thread of ours waits for it.
  sigset_t interrupt;
  sigemptyset(&interrupt);
  sigaddset(&interrupt, SIGINT);
  pthread_sigmask(SIG_BLOCK, &interrupt, nullptr);
  auto stub = pb::Snapshots::NewStub(grpc::CreateChannel("unix:" + socket, grpc::InsecureChannelCredentials()));
  pb::TakeSnapshotRequest request;
  *request.mutable_config() = ConfigFromEnvironment();
  request.set_sandbox_id(sandbox_id);
  request.set_name(name);
  grpc::ClientContext context;
  context.set_wait_for_ready(false);
  std::atomic<bool> done{false};
  std::thread watcher([&] {
    int signal_number = 0;
    sigwait(&interrupt, &signal_number);
    if (!done) context.TryCancel();
  });
  std::fprintf(stderr, "taking a snapshot of %s (waiting until it is Ready)...\n", sandbox_id.c_str());
  pb::Snapshot snapshot;
  const grpc::Status status = stub->Take(&context, request, &snapshot);
  done = true;
  pthread_kill(watcher.native_handle(), SIGINT);
  watcher.join();
  if (!status.ok()) {
    std::fprintf(stderr, "snapshot failed: %s\n", status.error_message().c_str());
    return 1;
  }
  std::fprintf(stderr, "snapshot %s of %s is %s%s\n", snapshot.id().c_str(), snapshot.sandbox_id().c_str(),
               snapshot.state().c_str(), snapshot.name().empty() ? "" : (" (" + snapshot.name() + ")").c_str());
  std::printf("%s\n", snapshot.id().c_str());
  return 0;
}

}  // namespace abx::daemon
