#pragma once
// files.watch and files.unwatch for both front doors (docs/epp1.md, "files.watch
// extension"): the checks, the sandbox's hub (watch_hub.h) made on first use with the mode
// its sandbox allows, and the registry of watch ids, shared by every session of one
// server and credential (it lives in their EndpointCache).

#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "bridge/base/cancel.h"
#include "bridge/base/error.h"
#include "bridge/core/config.h"
#include "bridge/core/files/watch_hub.h"
#include "bridge/core/parts.h"

namespace abx::core {

class BridgeCore;
class EndpointCache;

class WatchRegistry : public Part {
 public:
  ~WatchRegistry() override;  // StopAll
  // Stops every hub: the core, before what the hubs use goes.
  void StopAll();
  void Stop() override { StopAll(); }

  // The sandbox's hub while it takes watches; null when there is none.
  std::shared_ptr<WatchHub> Hub(const std::string& sandbox_id);
  // Keeps `hub` as the sandbox's, unless another came first: the one kept.
  std::shared_ptr<WatchHub> Keep(const std::string& sandbox_id, std::shared_ptr<WatchHub> hub);
  void NoteWatch(const std::string& watch_id, const std::string& sandbox_id);
  // The hub of a watch id, forgetting the id; null when unknown.
  std::shared_ptr<WatchHub> TakeWatch(const std::string& watch_id);
  // Drops the hub of a sandbox if it is `hub` (it is stopping).
  void DropHub(const std::string& sandbox_id, const std::shared_ptr<WatchHub>& hub);

 private:
  std::mutex mu_;
  std::map<std::string, std::shared_ptr<WatchHub>> hubs_;  // by sandbox id
  std::map<std::string, std::string> sandbox_of_;          // watch id → sandbox id
};

// The files.watch hubs of a server's sandboxes: a part of its EndpointCache (parts.h).
WatchRegistry& WatchesOf(EndpointCache& cache);

struct WatchStarted {
  std::string watch_id;
  std::string mode;  // "inotify" or "poll"
};

class Watches {
 public:
  Watches(BridgeCore* core, EndpointCache* upstream, const ProviderConfig* config)
      : core_(core), upstream_(upstream), config_(config) {}

  // Watches `path` (a file or a directory; E8005 when missing) and returns once every
  // later change will reach `listener`.
  Result<WatchStarted> Watch(const std::string& sandbox_id, const std::string& path, bool recursive,
                             std::shared_ptr<WatchListener> listener, CancelToken* cancel);
  // False when there is no such watch (unknown, stopped, or ended).
  bool Unwatch(const std::string& watch_id);

 private:
  Result<std::shared_ptr<WatchHub>> HubFor(const std::string& sandbox_id, CancelToken* cancel);

  BridgeCore* core_;
  EndpointCache* upstream_;
  const ProviderConfig* config_;
};

}  // namespace abx::core
