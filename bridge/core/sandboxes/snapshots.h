#pragma once
// Snapshots as the provider offers them (docs/epp1.md §3, "sandbox.snapshot extension";
// upstream in docs/opensandbox.md §1.12): take one and wait until it is Ready, keeping
// the source's entrypoint in it (saved_entrypoint.h); get, list across the server's
// pages, delete. Nothing is left behind by a snapshot nobody got an answer for: after a
// cancel or snapshot_timeout it is deleted once it leaves Creating, in the background.

#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "bridge/base/cancel.h"
#include "bridge/base/error.h"
#include "bridge/core/background_tasks.h"
#include "bridge/core/config.h"
#include "bridge/core/endpoint_cache.h"
#include "bridge/opensandbox/lifecycle_client.h"

namespace abx::core {

struct SnapshotList {
  std::vector<opensandbox::SnapshotRecord> snapshots;
  std::optional<std::string> next_cursor;
};

// A snapshot name as the contract allows it: 1–128 characters, no control characters.
// -32602 naming `field` otherwise.
Status CheckSnapshotName(const std::string& field, const std::string& name);

class Snapshots {
 public:
  Snapshots(std::shared_ptr<EndpointCache> upstream, const ProviderConfig* config, BackgroundRunner background)
      : upstream_(std::move(upstream)),
        config_(config),
        background_(std::move(background)),
        lifecycle_(upstream_->Lifecycle(*config)) {}

  // The snapshot once Ready. `progress` is called at most once a second while it is
  // Creating. The source must be Running (E8007); a server without snapshots is E8007;
  // Failed is E8010 with the server's reason and message (and the snapshot deleted).
  Result<opensandbox::SnapshotRecord> Take(const std::string& sandbox_id, const std::string& name,
                                           CancelToken* cancel, const std::function<void()>& progress);
  Result<opensandbox::SnapshotRecord> Get(const std::string& id, CancelToken* cancel);
  // Newest first; `limit` 0: all.
  Result<SnapshotList> List(const std::string& sandbox_id, const std::vector<std::string>& states, int limit,
                            const std::string& cursor, CancelToken* cancel);
  // false when there was none; E8007 while it is still Creating.
  Result<bool> Delete(const std::string& id, CancelToken* cancel);

 private:
  // Writes the launcher into the source (unless it runs one already); the release to
  // call once the snapshot has left Creating, or an error.
  Result<std::function<void()>> HoldSavedEntrypoint(const opensandbox::SandboxRecord& source, CancelToken* cancel);
  // After a cancel or a timeout: asks about the snapshot once a second in the background
  // (no thread held in between) until it leaves Creating, deletes it, then calls
  // `release`. Meanwhile an idle daemon does not exit (BackgroundRunner::keep_alive).
  // Given up after an hour, or at an orderly stop: the snapshot and the launcher are
  // then left, and the log says so.
  void DeleteWhenSettled(const std::string& id, std::function<void()> release);

  std::shared_ptr<EndpointCache> upstream_;
  const ProviderConfig* config_;
  BackgroundRunner background_;
  opensandbox::LifecycleClient lifecycle_;
};

}  // namespace abx::core
