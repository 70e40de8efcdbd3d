#pragma once
// Templates (docs/epp1.md §3, "templates feature"): an environment built once and started
// from a snapshot. A template is a Ready snapshot named "abx-template/<name>" on the
// server, so every host, build and daemon of the user sees the same ones and the
// provider keeps no store of its own (docs/mapping.md, "Templates").
//
// A build creates a sandbox from `from`, uploads the files, runs each command in order,
// snapshots the sandbox and kills it; a new version replaces the old only once it is
// Ready. Any failure, timeout or cancel kills the build sandbox and deletes the snapshot
// begun for it: the template keeps its previous version.

#include <cstdint>
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

namespace abx::core {

class BridgeCore;

inline constexpr const char* kTemplateSnapshotPrefix = "abx-template/";

// [a-z0-9][a-z0-9._-]{0,62}; -32602 naming `field` otherwise.
Status CheckTemplateName(const std::string& field, const std::string& name);

struct TemplateInfo {
  std::string name;
  std::string snapshot_id;
  std::string from;  // what it was built from (Build's answer only)
  std::string created_at;
};

struct TemplateBuildSpec {
  std::string name;
  std::string from;  // a template, an alias, "base" or an image: resolved as sandbox.create does
  std::vector<std::string> run;  // shell commands, each run with `sh -c` in `/`
  double timeout_s = 1800;       // for the whole build
};

// What a build reports as it goes: the phase ("create", "upload", "run", "snapshot";
// `step` the command's index for "run", else -1), and the commands' output.
struct TemplateBuildEvents {
  std::function<void(const std::string& phase, int step)> phase;
  std::function<void(int step, const std::string& data)> output;
};

// Uploads one of the build's local files into the build sandbox (the front door opens
// it with the host's rights).
using TemplateUpload = std::function<Status(const std::string& sandbox_id, CancelToken* cancel)>;

class Templates {
 public:
  Templates(BridgeCore* core, std::shared_ptr<EndpointCache> upstream, const ProviderConfig* config)
      : core_(core), upstream_(std::move(upstream)), config_(config) {}

  // A command that exits non-zero is E8010 with data step, exit_code and output_tail.
  Result<TemplateInfo> Build(const TemplateBuildSpec& spec, const std::vector<TemplateUpload>& uploads,
                             const TemplateBuildEvents& events, CancelToken* cancel);
  // Every template, the newest Ready snapshot of each name, sorted by name.
  Result<std::vector<TemplateInfo>> List(CancelToken* cancel);
  // Deletes every snapshot of the name; false when there was none.
  Result<bool> Delete(const std::string& name, CancelToken* cancel);

 private:
  BridgeCore* core_;
  std::shared_ptr<EndpointCache> upstream_;
  const ProviderConfig* config_;
};

// The snapshot a template name stands for (its newest Ready snapshot), for
// sandbox.create's template resolution; nullopt when there is no such template. Asks the
// server at most once per 30 s per server and key (EndpointCache), at once after a build
// or delete through this daemon.
Result<std::optional<std::string>> TemplateSnapshot(EndpointCache* upstream, const ProviderConfig& config,
                                                    const std::string& name, CancelToken* cancel);

}  // namespace abx::core
