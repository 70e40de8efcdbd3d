#include "tests/fake-opensandbox/snapshot_store.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "tests/fake-opensandbox/ids.h"
#include "tests/fake-opensandbox/sandbox_registry.h"

namespace fake_opensandbox {
namespace {

bool Fail(std::string* error, const std::string& what, const std::string& path) {
  *error = what + " " + path + ": " + strerror(errno);
  return false;
}

bool CopyFile(const std::string& from, const std::string& to, const struct stat& st, std::string* error) {
  const int in = open(from.c_str(), O_RDONLY | O_CLOEXEC);
  if (in < 0) return Fail(error, "open", from);
  const int out = open(to.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, st.st_mode & 07777);
  if (out < 0) {
    close(in);
    return Fail(error, "create", to);
  }
  bool ok = true;
  for (;;) {
    const ssize_t moved = copy_file_range(in, nullptr, out, nullptr, 1 << 30, 0);
    if (moved == 0) break;
    if (moved < 0) {
      if (errno == EINTR) continue;
      ok = Fail(error, "copy", from);
      break;
    }
  }
  close(in);
  if (close(out) != 0 && ok) ok = Fail(error, "write", to);
  return ok;
}

}  // namespace

bool CopyTree(const std::string& from, const std::string& to, std::string* error) {
  struct stat st;
  if (lstat(from.c_str(), &st) != 0) return Fail(error, "stat", from);
  if (S_ISLNK(st.st_mode)) {
    std::string target(static_cast<size_t>(st.st_size) + 1, '\0');
    const ssize_t got = readlink(from.c_str(), target.data(), target.size());
    if (got < 0) return Fail(error, "readlink", from);
    target.resize(static_cast<size_t>(got));
    if (symlink(target.c_str(), to.c_str()) != 0) return Fail(error, "symlink", to);
  } else if (S_ISDIR(st.st_mode)) {
    if (mkdir(to.c_str(), 0700) != 0) return Fail(error, "mkdir", to);
    DIR* dir = opendir(from.c_str());
    if (!dir) return Fail(error, "opendir", from);
    std::vector<std::string> names;
    while (dirent* entry = readdir(dir)) {
      const std::string name = entry->d_name;
      if (name != "." && name != "..") names.push_back(name);
    }
    closedir(dir);
    for (const auto& name : names) {
      if (!CopyTree(from + "/" + name, to + "/" + name, error)) return false;
    }
  } else if (S_ISREG(st.st_mode)) {
    if (!CopyFile(from, to, st, error)) return false;
  } else {
    return true;  // sockets and fifos are not part of an image
  }
  // As a committed image keeps them (best effort: the owner needs root).
  if (lchown(to.c_str(), st.st_uid, st.st_gid) != 0 && errno != EPERM) return Fail(error, "chown", to);
  if (!S_ISLNK(st.st_mode) && chmod(to.c_str(), st.st_mode & 07777) != 0) return Fail(error, "chmod", to);
  return true;
}

SnapshotStore::SnapshotStore(ServerClock clock, std::shared_ptr<FaultState> faults, std::string dir)
    : clock_(clock), faults_(std::move(faults)), dir_(std::move(dir)) {
  mkdir(dir_.c_str(), 0700);
}

SnapshotStore::~SnapshotStore() {
  std::vector<std::thread> captures;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
    changed_.notify_all();
    captures.swap(captures_);
  }
  for (auto& t : captures) t.join();
  RemoveTreeQuietly(dir_);
}

SnapshotInfo SnapshotStore::Begin(const std::string& sandbox_id, const std::optional<std::string>& name,
                                  const std::string& root, const std::optional<std::string>& origin_image) {
  Record record;
  record.info.id = NewUuid4();
  record.info.sandbox_id = sandbox_id;
  record.info.name = name;
  // snapshot_service.py: the 202's status.
  record.info.state = "Creating";
  record.info.reason = "snapshot_accepted";
  record.info.message = "Snapshot creation accepted.";
  record.info.created_at = clock_.Now();
  record.info.last_transition_at = record.info.created_at;
  record.source.dir = dir_ + "/" + record.info.id;
  record.source.origin_image = origin_image;
  std::lock_guard<std::mutex> lock(mutex_);
  record.info.sequence = next_sequence_++;
  SnapshotInfo answer = record.info;
  records_[answer.id] = std::move(record);
  captures_.emplace_back([this, id = answer.id, root] { Capture(id, root); });
  return answer;
}

void SnapshotStore::Capture(std::string id, std::string root) {
  const Faults faults = faults_->Get();
  const auto started = std::chrono::steady_clock::now();
  std::string dir;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    dir = records_.at(id).source.dir;
  }
  std::string error;
  bool ok = CopyTree(root, dir, &error);
  if (ok && faults.snapshot_fails) {
    ok = false;
    error = "the fake's snapshot_fails fault";
  }
  // A capture that takes a while, so that Creating can be seen (and a delete refused).
  std::unique_lock<std::mutex> lock(mutex_);
  changed_.wait_until(lock, started + std::chrono::milliseconds(faults.snapshot_capture_ms),
                      [&] { return stopping_; });
  lock.unlock();
  if (!ok) RemoveTreeQuietly(dir);
  Finish(id, ok, error);
}

void SnapshotStore::Finish(const std::string& id, bool ok, const std::string& error) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = records_.find(id);
  if (it == records_.end()) return;
  SnapshotInfo& info = it->second.info;
  info.state = ok ? "Ready" : "Failed";
  info.reason = ok ? "snapshot_ready" : "snapshot_capture_failed";
  info.message = ok ? "Snapshot is ready." : "Snapshot capture failed: " + error;
  info.last_transition_at = clock_.Now();
}

std::optional<SnapshotInfo> SnapshotStore::Get(const std::string& id) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = records_.find(id);
  if (it == records_.end()) return std::nullopt;
  return it->second.info;
}

std::vector<SnapshotInfo> SnapshotStore::List() {
  std::lock_guard<std::mutex> lock(mutex_);
  std::vector<SnapshotInfo> out;
  for (const auto& [id, record] : records_) out.push_back(record.info);
  return out;
}

SnapshotStore::DeleteResult SnapshotStore::Delete(const std::string& id) {
  std::string dir;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = records_.find(id);
    if (it == records_.end()) return DeleteResult::kNotFound;
    if (it->second.info.state == "Creating") return DeleteResult::kCreating;
    dir = it->second.source.dir;
    records_.erase(it);
  }
  RemoveTreeQuietly(dir);
  return DeleteResult::kDeleted;
}

std::optional<SnapshotSource> SnapshotStore::SourceOf(const std::string& id, std::string* state) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = records_.find(id);
  if (it == records_.end()) return std::nullopt;
  *state = it->second.info.state;
  return it->second.source;
}

size_t SnapshotStore::Count() {
  std::lock_guard<std::mutex> lock(mutex_);
  return records_.size();
}

}  // namespace fake_opensandbox
