#pragma once
// A snapshot keeps a sandbox's files, not the entrypoint it ran, and the server starts a
// restore with `tail -f /dev/null` unless told otherwise (docs/opensandbox.md §1.12): a
// code-interpreter snapshot would come back without its interpreter. So sandbox.snapshot
// writes the source's entrypoint into the source as a small launcher script, just for
// the capture, and a restore runs that launcher (docs/mapping.md, "Snapshots").

#include <condition_variable>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <vector>

namespace abx::core {

// The launcher's path in a sandbox: at the root, which every image has.
inline constexpr const char* kSavedEntrypointPath = "/.abx-opensandbox-entrypoint";

// `#!/bin/sh` and one line that execs `entrypoint`, each word quoted.
std::string SavedEntrypointScript(const std::vector<std::string>& entrypoint);

// Whether a sandbox already runs the launcher (it was restored from a snapshot): its
// launcher is then part of it and stays.
bool RunsSavedEntrypoint(const std::vector<std::string>& entrypoint);

// Snapshots of one sandbox may overlap: the launcher is written by the first and removed
// by the last, and a snapshot starts only once it is written. Per sandbox id, in one
// daemon (two daemons snapshotting one sandbox at once may remove it under each other).
class SavedEntrypointLeases {
 public:
  // Calls `write` when no snapshot of the sandbox holds the launcher; false when it
  // failed (then nothing is held). Waits while another caller writes.
  bool Acquire(const std::string& sandbox_id, const std::function<bool()>& write);
  // Calls `remove` when this was the last holder.
  void Release(const std::string& sandbox_id, const std::function<void()>& remove);

 private:
  struct Entry {
    int holders = 0;
    bool busy = false;  // a write or a removal runs
  };
  std::mutex mu_;
  std::condition_variable changed_;
  std::map<std::string, Entry> entries_;
};

}  // namespace abx::core
