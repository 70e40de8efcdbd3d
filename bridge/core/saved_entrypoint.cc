#include "bridge/core/saved_entrypoint.h"

#include "bridge/core/shell_quote.h"

namespace abx::core {

std::string SavedEntrypointScript(const std::vector<std::string>& entrypoint) {
  return "#!/bin/sh\n# The entrypoint this sandbox's source ran, kept by sandbox.snapshot.\nexec " +
         ShellJoin(entrypoint) + "\n";
}

bool RunsSavedEntrypoint(const std::vector<std::string>& entrypoint) {
  return entrypoint.size() == 1 && entrypoint[0] == kSavedEntrypointPath;
}

bool SavedEntrypointLeases::Acquire(const std::string& sandbox_id, const std::function<bool()>& write) {
  std::unique_lock<std::mutex> lock(mu_);
  changed_.wait(lock, [&] { return !entries_[sandbox_id].busy; });
  Entry& entry = entries_[sandbox_id];
  if (entry.holders > 0) {
    ++entry.holders;
    return true;
  }
  entry.busy = true;
  lock.unlock();
  const bool written = write();
  lock.lock();
  Entry& after = entries_[sandbox_id];
  after.busy = false;
  if (written) {
    ++after.holders;
  } else if (after.holders == 0) {
    entries_.erase(sandbox_id);
  }
  changed_.notify_all();
  return written;
}

void SavedEntrypointLeases::Release(const std::string& sandbox_id, const std::function<void()>& remove) {
  std::unique_lock<std::mutex> lock(mu_);
  auto it = entries_.find(sandbox_id);
  if (it == entries_.end() || it->second.holders == 0) return;
  if (--it->second.holders > 0) return;
  it->second.busy = true;
  lock.unlock();
  remove();
  lock.lock();
  Entry& after = entries_[sandbox_id];
  after.busy = false;
  if (after.holders == 0) entries_.erase(sandbox_id);
  changed_.notify_all();
}

}  // namespace abx::core
