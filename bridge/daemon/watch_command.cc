#include "bridge/daemon/watch_command.h"

#include <cstdio>

#include <grpcpp/grpcpp.h>

#include "bridge/daemon/cli_bridge.h"
#include "bridge/daemon/cli_config.h"
#include "bridge/daemon/interrupt_cancels.h"
#include "proto/files.grpc.pb.h"

namespace abx::daemon {
namespace {

namespace pb = abx::opensandbox::v1;

}  // namespace

int WatchPath(const std::string& socket, const std::string& sandbox_id, const std::string& path, bool recursive) {
  // ^C (or SIGTERM) ends the watch; blocked before gRPC starts its threads.
  InterruptCancels interrupts({SIGINT, SIGTERM});
  auto stub = pb::Files::NewStub(grpc::CreateChannel("unix:" + socket, grpc::InsecureChannelCredentials()));
  pb::WatchRequest request;
  *request.mutable_config() = ConfigFromEnvironment();
  request.set_sandbox_id(sandbox_id);
  request.set_path(path);
  request.set_recursive(recursive);
  grpc::ClientContext context;
  interrupts.Watch(&context);
  auto reader = stub->Watch(&context, request);
  pb::WatchEvent event;
  std::string ended;
  while (reader->Read(&event)) {
    if (event.has_started()) {
      std::fprintf(stderr, "watching %s in %s (%s); ^C stops\n", path.c_str(), sandbox_id.c_str(),
                   event.started().mode().c_str());
    } else if (event.has_changes()) {
      for (const pb::FileChange& change : event.changes().changes()) {
        std::printf("%s %s%s\n", change.type().c_str(), change.path().c_str(), change.is_dir() ? "/" : "");
      }
      std::fflush(stdout);
    } else if (event.has_ended()) {
      ended = event.ended().reason();
    }
  }
  const grpc::Status status = reader->Finish();
  interrupts.Done();
  if (interrupts.interrupted()) return 0;
  if (!ended.empty()) {
    std::fprintf(stderr, "the watch ended: %s\n", ended.c_str());
    return 1;
  }
  if (!status.ok()) {
    std::fprintf(stderr, "watch failed: %s\n", CallError(status, socket).c_str());
    return 1;
  }
  return 0;
}

}  // namespace abx::daemon
