#include "bridge/core/sandboxes/snapshots.h"

#include <algorithm>
#include <chrono>

#include "bridge/base/log.h"
#include "bridge/base/time_util.h"
#include "bridge/core/files/files.h"
#include "bridge/core/sandboxes/offset_pages.h"
#include "bridge/core/saved_entrypoint.h"

namespace abx::core {
namespace {

// The wait between polls starts short and doubles up to the longest: a small capture
// answers within ~100 ms of being Ready, a long one costs a GET every 500 ms.
constexpr auto kFirstPollInterval = std::chrono::milliseconds(100);
constexpr auto kLongestPollInterval = std::chrono::milliseconds(500);
constexpr int64_t kProgressEveryMs = 1000;
// How long a snapshot left behind by a cancel is waited for before it is given up on
// (the server's capture has no bound of its own).
constexpr auto kSettleWaitLimit = std::chrono::hours(1);
constexpr size_t kMaxNameLength = 128;

Error Cancelled() { return MakeError(ErrorCode::kCancelled, "sandbox.snapshot was cancelled"); }

// The server's refusals, in the contract's terms.
Error Refused(Error e, const std::string& sandbox_id) {
  if (e.http_status == 501) {
    e.code = ErrorCode::kInvalidState;
    e.message = "this server's runtime has no snapshots (" + e.message + ")";
  } else if (e.http_status == 409) {
    e.message = "sandbox " + sandbox_id + " cannot be snapshotted now (" + e.message + ")";
  }
  return e.Within("sandbox.snapshot");
}

Error FailedSnapshot(const opensandbox::SnapshotRecord& s) {
  std::string why = s.reason;
  if (!s.message.empty()) why += (why.empty() ? "" : ": ") + s.message;
  return MakeError(ErrorCode::kUpstream,
                   "snapshot " + s.id + " of sandbox " + s.sandbox_id + " failed" + (why.empty() ? "" : " (" + why + ")"));
}

}  // namespace

Status CheckSnapshotName(const std::string& field, const std::string& name) {
  size_t characters = 0;
  for (size_t i = 0; i < name.size(); ++i) {
    const unsigned char c = static_cast<unsigned char>(name[i]);
    const bool c1 = c == 0xC2 && i + 1 < name.size() && static_cast<unsigned char>(name[i + 1]) <= 0x9F;
    if (c < 0x20 || c == 0x7f || c1) return InvalidParams(field, field + " must not contain control characters");
    if ((c & 0xC0) != 0x80) ++characters;  // UTF-8: count lead bytes only
  }
  if (characters == 0 || characters > kMaxNameLength) {
    return InvalidParams(field, field + " must be 1 to 128 characters");
  }
  return OkStatus();
}

Result<std::function<void()>> Snapshots::HoldSavedEntrypoint(const opensandbox::SandboxRecord& source,
                                                             CancelToken* cancel) {
  if (source.entrypoint.empty() || RunsSavedEntrypoint(source.entrypoint)) return std::function<void()>([] {});
  const std::string id = source.id;
  const std::string script = SavedEntrypointScript(source.entrypoint);
  std::shared_ptr<EndpointCache> upstream = upstream_;
  const ProviderConfig config = *config_;
  Status written = OkStatus();
  const bool held = upstream->saved_entrypoints().Acquire(id, [&] {
    Files files(upstream.get(), &config);
    auto wrote = files.Write(id, kSavedEntrypointPath, script, 0755, /*append=*/false, cancel);
    if (!wrote.ok()) {
      written = wrote.error();
      CancelToken never;  // a write cut short may have left the file: best effort
      files.Remove(id, kSavedEntrypointPath, /*recursive=*/false, &never);
    }
    return wrote.ok();
  });
  if (!held) return written.error().Within("sandbox.snapshot: keep the sandbox's entrypoint");
  return std::function<void()>([upstream, config, id] {
    upstream->saved_entrypoints().Release(id, [&] {
      Files files(upstream.get(), &config);
      CancelToken never;
      Status removed = files.Remove(id, kSavedEntrypointPath, /*recursive=*/false, &never);
      if (!removed.ok() && removed.error().code != ErrorCode::kNotFound) {
        log::Warn("snapshot.launcher_left", {{"sandbox_id", id}, {"error", removed.error().message}});
      }
    });
  });
}

Result<opensandbox::SnapshotRecord> Snapshots::Take(const std::string& sandbox_id, const std::string& name,
                                                    CancelToken* cancel, const std::function<void()>& progress) {
  const int64_t deadline = NowMillis() + static_cast<int64_t>(config_->snapshot_timeout_s * 1000);
  auto source = lifecycle_.Get(sandbox_id, cancel);
  if (!source.ok()) return source.error().Within("sandbox.snapshot");
  if (source->state != "Running") {
    return MakeError(ErrorCode::kInvalidState,
                     "sandbox " + sandbox_id + " is " + source->state + ": only a Running sandbox can be snapshotted");
  }
  ABX_ASSIGN_OR_RETURN(std::function<void()> release, HoldSavedEntrypoint(*source, cancel));
  if (cancel->cancelled()) {
    release();
    return Cancelled();
  }
  // The POST is not cancelled half-way: a snapshot the server began must be known, to be
  // deleted. A cancel during it is honoured right after.
  auto created = lifecycle_.CreateSnapshot(sandbox_id, name, nullptr);
  if (!created.ok()) {
    release();
    return Refused(created.error(), sandbox_id);
  }
  const std::string id = created->id;
  int64_t next_progress = NowMillis();
  std::chrono::milliseconds interval = kFirstPollInterval;
  opensandbox::SnapshotRecord last = std::move(created).value();
  for (;;) {
    if (last.state == "Ready") {
      release();
      return last;
    }
    if (last.state == "Failed") {
      release();
      Error failed = FailedSnapshot(last);
      // Nobody can use it, and the answer already says why.
      Status deleted = lifecycle_.DeleteSnapshot(id, nullptr);
      if (!deleted.ok() && deleted.error().code != ErrorCode::kNotFound) {
        log::Warn("snapshot.failed_left", {{"snapshot_id", id}, {"error", deleted.error().message}});
      }
      return failed;
    }
    if (last.state == "Deleting") {
      release();
      return MakeError(ErrorCode::kNotFound, "snapshot " + id + " is being deleted");
    }
    if (cancel->cancelled()) {
      DeleteWhenSettled(id, std::move(release));
      return Cancelled();
    }
    if (NowMillis() >= deadline) {
      DeleteWhenSettled(id, std::move(release));
      return MakeError(ErrorCode::kTimeout, "snapshot " + id + " of sandbox " + sandbox_id +
                                                " was not Ready within snapshot_timeout; it is deleted once the server is done");
    }
    if (progress && NowMillis() >= next_progress) {
      progress();
      next_progress = NowMillis() + kProgressEveryMs;
    }
    cancel->SleepFor(interval);
    interval = std::min(interval * 2, std::chrono::milliseconds(kLongestPollInterval));
    if (cancel->cancelled()) continue;
    auto polled = lifecycle_.GetSnapshot(id, cancel);
    if (polled.ok()) {
      last = std::move(polled).value();
    } else if (polled.error().code == ErrorCode::kNotFound) {
      release();
      return MakeError(ErrorCode::kNotFound, "snapshot " + id + " was deleted while it was being made");
    }  // else transient: ask again until the deadline
  }
}

namespace {

// A snapshot nobody got an answer for, waited out in steps (DeleteWhenSettled).
struct Abandoned {
  std::shared_ptr<EndpointCache> upstream;
  ProviderConfig config;
  std::string id;
  std::function<void()> release;
  BackgroundRunner background;
  std::chrono::steady_clock::time_point give_up;
  std::shared_ptr<void> keep_alive;  // the daemon does not idle out meanwhile
};

void SettleStep(const std::shared_ptr<Abandoned>& a) {
  opensandbox::LifecycleClient lifecycle = a->upstream->Lifecycle(a->config);
  auto s = lifecycle.GetSnapshot(a->id, nullptr);
  bool gone = !s.ok() && s.error().code == ErrorCode::kNotFound;
  if (s.ok() && s->state != "Creating") {
    Status deleted = lifecycle.DeleteSnapshot(a->id, nullptr);
    gone = deleted.ok() || deleted.error().code == ErrorCode::kNotFound;
  }
  if (gone) {
    log::Info("snapshot.abandoned_deleted", {{"snapshot_id", a->id}});
    a->release();
    return;
  }
  if (a->background.stopping() || std::chrono::steady_clock::now() >= a->give_up) {
    // Still Creating: the launcher must stay for its capture, so both are left.
    log::Warn("snapshot.abandoned_left", {{"snapshot_id", a->id}});
    return;
  }
  a->background.run_after(std::chrono::seconds(1), [a] { SettleStep(a); });
}

}  // namespace

void Snapshots::DeleteWhenSettled(const std::string& id, std::function<void()> release) {
  auto abandoned = std::make_shared<Abandoned>();
  abandoned->upstream = upstream_;
  abandoned->config = *config_;
  abandoned->id = id;
  abandoned->release = std::move(release);
  abandoned->background = background_;
  abandoned->give_up = std::chrono::steady_clock::now() + kSettleWaitLimit;
  if (background_.keep_alive) abandoned->keep_alive = background_.keep_alive();
  background_.run_after(std::chrono::milliseconds(0), [abandoned] { SettleStep(abandoned); });
}

Result<opensandbox::SnapshotRecord> Snapshots::Get(const std::string& id, CancelToken* cancel) {
  auto s = lifecycle_.GetSnapshot(id, cancel);
  if (!s.ok()) return s.error().Within("snapshot.get");
  return s;
}

Result<SnapshotList> Snapshots::List(const std::string& sandbox_id, const std::vector<std::string>& states,
                                     int limit, const std::string& cursor, CancelToken* cancel) {
  using Page = std::pair<std::vector<opensandbox::SnapshotRecord>, bool>;
  ABX_ASSIGN_OR_RETURN(OffsetPage<opensandbox::SnapshotRecord> read,
                       ReadFromCursor<opensandbox::SnapshotRecord>(cursor, limit, [&](int page, int size) -> Result<Page> {
                         auto result = lifecycle_.ListSnapshots(sandbox_id, states, page, size, cancel);
                         if (!result.ok()) return result.error().Within("snapshot.list");
                         return Page(std::move(result->items), result->has_next);
                       }));
  SnapshotList out;
  out.snapshots = std::move(read.items);
  out.next_cursor = std::move(read.next_cursor);
  return out;
}

Result<bool> Snapshots::Delete(const std::string& id, CancelToken* cancel) {
  Status st = lifecycle_.DeleteSnapshot(id, cancel);
  if (st.ok()) return true;
  if (st.error().code == ErrorCode::kNotFound) return false;
  Error e = st.error();
  if (e.http_status == 409) e.message = "snapshot " + id + " is still being created (" + e.message + ")";
  return e.Within("snapshot.delete");
}

}  // namespace abx::core
