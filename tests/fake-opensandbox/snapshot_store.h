#pragma once

// The server's snapshots as its Docker runtime keeps them (docs/opensandbox.md §1.11): a
// capture of a Running sandbox's filesystem, made in the background (Creating, then
// Ready or Failed), listed and deleted by id, and the source of a restore
// (POST /sandboxes with snapshotId). A capture is a copy of the sandbox's directory
// under <work>/snapshots/<id>; it outlives its source, as a committed image does.

#include <condition_variable>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "tests/fake-opensandbox/fault_state.h"
#include "tests/fake-opensandbox/server_clock.h"

namespace fake_opensandbox {

struct SnapshotInfo {
  std::string id;
  std::string sandbox_id;
  std::optional<std::string> name;
  std::string state;  // Creating, Ready, Failed
  std::string reason;
  std::string message;
  TimePoint created_at;
  TimePoint last_transition_at;
  uint64_t sequence = 0;  // creation order, for stable newest-first sorting
};

// What a restore starts from: the captured directory and the image it first came from
// (the fake's image facts, image_catalog.h, follow the files).
struct SnapshotSource {
  std::string dir;
  std::optional<std::string> origin_image;
};

class SnapshotStore {
 public:
  SnapshotStore(ServerClock clock, std::shared_ptr<FaultState> faults, std::string dir);
  ~SnapshotStore();  // waits for captures in progress

  // Starts capturing `root`; the answer is the snapshot as the 202 shows it (Creating).
  SnapshotInfo Begin(const std::string& sandbox_id, const std::optional<std::string>& name,
                     const std::string& root, const std::optional<std::string>& origin_image);
  std::optional<SnapshotInfo> Get(const std::string& id);
  std::vector<SnapshotInfo> List();
  enum class DeleteResult { kDeleted, kNotFound, kCreating };
  DeleteResult Delete(const std::string& id);
  // A snapshot to restore from; nullopt when unknown. *state tells whether it is Ready.
  std::optional<SnapshotSource> SourceOf(const std::string& id, std::string* state);
  size_t Count();

 private:
  struct Record {
    SnapshotInfo info;
    SnapshotSource source;
  };
  void Capture(std::string id, std::string root);
  void Finish(const std::string& id, bool ok, const std::string& error);

  const ServerClock clock_;
  std::shared_ptr<FaultState> faults_;
  const std::string dir_;

  std::mutex mutex_;
  std::condition_variable changed_;
  uint64_t next_sequence_ = 0;
  std::map<std::string, Record> records_;
  std::vector<std::thread> captures_;
  bool stopping_ = false;
};

// A copy of the tree at `from` at `to` (which must not exist): directories, regular files,
// symlinks, with their modes and owners. False with *error on the first failure.
bool CopyTree(const std::string& from, const std::string& to, std::string* error);

}  // namespace fake_opensandbox
