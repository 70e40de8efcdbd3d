#include "bridge/core/files/watches.h"

#include "bridge/base/log.h"

#include "bridge/core/bridge_core.h"
#include "bridge/core/endpoint_cache.h"
#include "bridge/core/exec/sandbox_script.h"
#include "bridge/core/files/files.h"
#include "bridge/core/random_hex.h"

namespace abx::core {

WatchRegistry::~WatchRegistry() { StopAll(); }

WatchRegistry& WatchesOf(EndpointCache& cache) {
  return cache.parts().Get<WatchRegistry>([] { return std::make_unique<WatchRegistry>(); });
}

void WatchRegistry::StopAll() {
  std::map<std::string, std::shared_ptr<WatchHub>> hubs;
  {
    std::lock_guard<std::mutex> lock(mu_);
    hubs.swap(hubs_);
  }
  for (auto& [sandbox, hub] : hubs) hub->Stop();
}

std::shared_ptr<WatchHub> WatchRegistry::Hub(const std::string& sandbox_id) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = hubs_.find(sandbox_id);
  return it == hubs_.end() ? nullptr : it->second;
}

std::shared_ptr<WatchHub> WatchRegistry::Keep(const std::string& sandbox_id, std::shared_ptr<WatchHub> hub) {
  std::lock_guard<std::mutex> lock(mu_);
  return hubs_.emplace(sandbox_id, std::move(hub)).first->second;
}

void WatchRegistry::NoteWatch(const std::string& watch_id, const std::string& sandbox_id) {
  std::lock_guard<std::mutex> lock(mu_);
  sandbox_of_[watch_id] = sandbox_id;
}

std::shared_ptr<WatchHub> WatchRegistry::TakeWatch(const std::string& watch_id) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = sandbox_of_.find(watch_id);
  if (it == sandbox_of_.end()) return nullptr;
  auto hub = hubs_.find(it->second);
  sandbox_of_.erase(it);
  return hub == hubs_.end() ? nullptr : hub->second;
}

void WatchRegistry::DropHub(const std::string& sandbox_id, const std::shared_ptr<WatchHub>& hub) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = hubs_.find(sandbox_id);
  if (it != hubs_.end() && it->second == hub) hubs_.erase(it);
}

Result<std::shared_ptr<WatchHub>> Watches::HubFor(const std::string& sandbox_id, CancelToken* cancel) {
  WatchRegistry& registry = WatchesOf(*upstream_);
  if (auto hub = registry.Hub(sandbox_id)) return hub;
  // The sandbox's tools decide the mode, once per hub.
  ABX_ASSIGN_OR_RETURN(opensandbox::ExecdClient execd, upstream_->Execd(sandbox_id, *config_, cancel));
  int code = 0;
  ABX_ASSIGN_OR_RETURN(std::string said,
                       RunSandboxScript(execd, WatchModeProbe(core_->owner(), core_->instance()), &code, cancel));
  const WatchProbe probe = ParseWatchProbe(said);
  // A predecessor's hosts whose bridge is gone would run until their lease ends.
  std::string kill;
  for (const std::string& instance : GoneInstances(probe.left)) {
    for (int pid : probe.left.at(instance)) kill += " " + std::to_string(pid);
  }
  if (!kill.empty()) {
    int killed = 0;
    auto done = RunSandboxScript(execd, "kill -9" + kill + " 2>/dev/null; true", &killed, cancel);
    if (!done.ok()) log::Info("watch.predecessor_cleanup_failed", {{"sandbox_id", sandbox_id}, {"error", done.error().message}});
  }
  const WatchHub::Mode mode = probe.inotify ? WatchHub::Mode::kInotify : WatchHub::Mode::kPoll;
  return registry.Keep(sandbox_id, std::make_shared<WatchHub>(core_, upstream_, *config_, sandbox_id, mode));
}

Result<WatchStarted> Watches::Watch(const std::string& sandbox_id, const std::string& path, bool recursive,
                                    std::shared_ptr<WatchListener> listener, CancelToken* cancel) {
  // A missing path is E8005; the watch then names the path as execd resolved it.
  ABX_ASSIGN_OR_RETURN(FileEntry entry, Files(upstream_, config_).Stat(sandbox_id, path, cancel));
  const std::string watched = entry.path.empty() ? path : entry.path;
  const std::string watch_id = "w-" + RandomHex(24);
  // A hub found stopping (its last watch just went) is replaced by a new one.
  for (int attempt = 0;; ++attempt) {
    ABX_ASSIGN_OR_RETURN(std::shared_ptr<WatchHub> hub, HubFor(sandbox_id, cancel));
    Status added = hub->Add(watch_id, watched, recursive, listener, cancel);
    if (added.ok()) {
      WatchesOf(*upstream_).NoteWatch(watch_id, sandbox_id);
      return WatchStarted{watch_id, hub->mode_name()};
    }
    // Only a hub that is stopping (or ended) is replaced; any other failure is this
    // watch's alone, and the sandbox's other watches go on.
    if (!added.error().retryable || added.error().code != ErrorCode::kInvalidState || attempt > 0) {
      return added.error();
    }
    WatchesOf(*upstream_).DropHub(sandbox_id, hub);
  }
}

bool Watches::Unwatch(const std::string& watch_id) {
  std::shared_ptr<WatchHub> hub = WatchesOf(*upstream_).TakeWatch(watch_id);
  if (!hub) return false;
  bool now_empty = false;
  const bool removed = hub->Remove(watch_id, &now_empty);
  // A hub without watches has stopped: the next watch of its sandbox makes another.
  if (now_empty) WatchesOf(*upstream_).DropHub(hub->sandbox_id(), hub);
  return removed;
}

}  // namespace abx::core
