#include "bridge/api/grpc/snapshots_service.h"

#include <string>
#include <vector>

#include "bridge/core/sandboxes/snapshots.h"

namespace abx::api {
namespace {

namespace pb = abx::opensandbox::v1;

// The same bound as EPP/1's snapshot.list.
constexpr int kMaxListLimit = 200;

void ToProto(const opensandbox::SnapshotRecord& s, pb::Snapshot* out) {
  out->set_id(s.id);
  out->set_sandbox_id(s.sandbox_id);
  out->set_name(s.name);
  out->set_state(s.state);
  out->set_reason(s.reason);
  out->set_message(s.message);
  out->set_created_at(s.created_at);
}

core::Snapshots SnapshotsOf(TypedCall& call) {
  return core::Snapshots(call.shared_upstream(), &call.config(), call.core()->Runner());
}

}  // namespace

grpc::ServerUnaryReactor* SnapshotsService::Take(grpc::CallbackServerContext* context,
                                                 const pb::TakeSnapshotRequest* request, pb::Snapshot* reply) {
  return Serve(deps_, context, "Snapshots.Take", request->config(), [=](TypedCall& call) -> Status {
    ABX_ASSIGN_OR_RETURN(std::string id, Required(request->sandbox_id(), "sandbox_id"));
    if (!request->name().empty()) {
      Status valid = core::CheckSnapshotName("name", request->name());
      if (!valid.ok()) return valid;
    }
    ABX_ASSIGN_OR_RETURN(opensandbox::SnapshotRecord snapshot,
                         SnapshotsOf(call).Take(id, request->name(), call.cancel(), {}));
    ToProto(snapshot, reply);
    return OkStatus();
  });
}

grpc::ServerUnaryReactor* SnapshotsService::Get(grpc::CallbackServerContext* context,
                                                const pb::GetSnapshotRequest* request, pb::Snapshot* reply) {
  return Serve(deps_, context, "Snapshots.Get", request->config(), [=](TypedCall& call) -> Status {
    ABX_ASSIGN_OR_RETURN(std::string id, Required(request->snapshot_id(), "snapshot_id"));
    ABX_ASSIGN_OR_RETURN(opensandbox::SnapshotRecord snapshot, SnapshotsOf(call).Get(id, call.cancel()));
    ToProto(snapshot, reply);
    return OkStatus();
  });
}

grpc::ServerUnaryReactor* SnapshotsService::List(grpc::CallbackServerContext* context,
                                                 const pb::ListSnapshotsRequest* request,
                                                 pb::ListSnapshotsReply* reply) {
  return Serve(deps_, context, "Snapshots.List", request->config(), [=](TypedCall& call) -> Status {
    if (request->limit() < 0 || request->limit() > kMaxListLimit) {
      return InvalidParams("limit", "limit must be between 1 and 200 (0: all)");
    }
    const std::vector<std::string> states(request->states().begin(), request->states().end());
    ABX_ASSIGN_OR_RETURN(core::SnapshotList list,
                         SnapshotsOf(call).List(request->sandbox_id(), states, request->limit(), request->cursor(),
                                                call.cancel()));
    for (const auto& snapshot : list.snapshots) ToProto(snapshot, reply->add_snapshots());
    reply->set_next_cursor(list.next_cursor.value_or(""));
    return OkStatus();
  });
}

grpc::ServerUnaryReactor* SnapshotsService::Delete(grpc::CallbackServerContext* context,
                                                   const pb::DeleteSnapshotRequest* request,
                                                   pb::DeleteSnapshotReply* reply) {
  return Serve(deps_, context, "Snapshots.Delete", request->config(), [=](TypedCall& call) -> Status {
    ABX_ASSIGN_OR_RETURN(std::string id, Required(request->snapshot_id(), "snapshot_id"));
    ABX_ASSIGN_OR_RETURN(bool deleted, SnapshotsOf(call).Delete(id, call.cancel()));
    reply->set_deleted(deleted);
    return OkStatus();
  });
}

}  // namespace abx::api
