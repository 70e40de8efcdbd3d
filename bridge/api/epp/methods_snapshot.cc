// sandbox.snapshot extension: sandbox.snapshot, snapshot.get/list/delete (docs/epp1.md §3).
// A restore is sandbox.create with provider_options.snapshot_id (methods_sandbox.cc).

#include "bridge/api/epp/methods.h"
#include "bridge/api/epp/params.h"
#include "bridge/api/epp/session.h"
#include "bridge/base/json.h"
#include "bridge/core/bridge_core.h"
#include "bridge/core/sandboxes/snapshots.h"

namespace abx::epp {
namespace {

using json::Quote;

constexpr int kMaxListLimit = 200;

std::string SnapshotJson(const opensandbox::SnapshotRecord& s) {
  return "{\"id\":" + Quote(s.id) + ",\"sandbox_id\":" + Quote(s.sandbox_id) + ",\"name\":" + Quote(s.name) +
         ",\"state\":" + Quote(s.state) + ",\"reason\":" + Quote(s.reason) + ",\"message\":" + Quote(s.message) +
         ",\"created_at\":" + Quote(s.created_at) + "}";
}

core::Snapshots SnapshotsOf(Request& req) {
  return core::Snapshots(req.session().upstream(), &req.session().config(), req.session().core().Runner());
}

Result<std::string> SnapshotId(const Params& p) {
  ABX_ASSIGN_OR_RETURN(auto id, p.String("snapshot_id"));
  if (!id || id->empty()) return InvalidParams("snapshot_id", "snapshot_id is required");
  return *id;
}

}  // namespace

Result<std::string> SandboxSnapshot(Request& req) {
  Params p(req.params());
  ABX_ASSIGN_OR_RETURN(std::string sandbox_id, SandboxId(p));
  ABX_ASSIGN_OR_RETURN(auto name, p.String("name"));
  if (name) {
    Status valid = core::CheckSnapshotName("name", *name);
    if (!valid.ok()) return valid.error();
  }
  const std::string id_json = req.id_json();
  ABX_ASSIGN_OR_RETURN(opensandbox::SnapshotRecord snapshot,
                       SnapshotsOf(req).Take(sandbox_id, name.value_or(""), &req.cancel(), [&] {
                         req.Notify("$/progress", "{\"id\":" + id_json + ",\"state\":\"Creating\"}");
                       }));
  return SnapshotJson(snapshot);
}

Result<std::string> SnapshotGet(Request& req) {
  ABX_ASSIGN_OR_RETURN(std::string id, SnapshotId(Params(req.params())));
  ABX_ASSIGN_OR_RETURN(opensandbox::SnapshotRecord snapshot, SnapshotsOf(req).Get(id, &req.cancel()));
  return SnapshotJson(snapshot);
}

Result<std::string> SnapshotList(Request& req) {
  Params p(req.params());
  ABX_ASSIGN_OR_RETURN(auto sandbox_id, p.String("sandbox_id"));
  ABX_ASSIGN_OR_RETURN(auto states, p.StringArray("state"));
  ABX_ASSIGN_OR_RETURN(auto limit, p.Int("limit"));
  ABX_ASSIGN_OR_RETURN(auto cursor, p.String("cursor"));
  if (limit && (*limit < 1 || *limit > kMaxListLimit)) {
    return InvalidParams("limit", "limit must be between 1 and 200");
  }
  ABX_ASSIGN_OR_RETURN(core::SnapshotList list,
                       SnapshotsOf(req).List(sandbox_id.value_or(""), states.value_or(std::vector<std::string>{}),
                                             static_cast<int>(limit.value_or(0)), cursor.value_or(""), &req.cancel()));
  std::string out = "{\"snapshots\":[";
  for (size_t i = 0; i < list.snapshots.size(); ++i) {
    if (i) out += ",";
    out += SnapshotJson(list.snapshots[i]);
  }
  out += "],\"next_cursor\":" + (list.next_cursor ? Quote(*list.next_cursor) : std::string("null")) + "}";
  return out;
}

Result<std::string> SnapshotDelete(Request& req) {
  ABX_ASSIGN_OR_RETURN(std::string id, SnapshotId(Params(req.params())));
  ABX_ASSIGN_OR_RETURN(bool deleted, SnapshotsOf(req).Delete(id, &req.cancel()));
  return std::string(deleted ? "{\"deleted\":true}" : "{\"deleted\":false}");
}

}  // namespace abx::epp
