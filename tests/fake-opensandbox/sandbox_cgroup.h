#pragma once

// The CPU limit of a sandbox that runs the real execd (real_execd.h), as Docker applies a
// create request's resourceLimits.cpu: `nano_cpus`, which the kernel enforces as a CFS
// quota of `cpus` × the period. A control group of the host's cpu controller per sandbox
// (cgroup v1's `cpu` hierarchy, else the unified v2 one); the sandbox's first process
// joins it before it starts anything (the jail's --cgroup-procs), so every process the
// sandbox ever has counts against the quota.
//
// The host may not let the fake make one (no cpu controller, not root): the sandbox then
// runs without a limit, and Create says why, for the fake to log. On cgroup v2 the root
// group's cpu controller is switched on for its children and left on. Groups a killed
// fake left behind are removed by the next one.

#include <memory>
#include <optional>
#include <string>

namespace fake_opensandbox {

// The server's parse_nano_cpus: "500m" is half a core, "2" two cores, "1.5" one and a
// half (trimmed, any case, Python's float()); nullopt for anything else and for a value
// that is not positive (the server logs such a value and ignores it).
std::optional<double> ParseCpuLimit(const std::string& value);

class SandboxCgroup {
 public:
  // A group named after `sandbox_id` and this process whose quota is `cpus` cores; null
  // with *error when the host does not allow it.
  static std::unique_ptr<SandboxCgroup> Create(const std::string& sandbox_id, double cpus, std::string* error);
  // Removes the group; its processes must have ended (RealExecd::Shutdown waits for that).
  ~SandboxCgroup();

  // The file a process writes "0" to in order to join the group.
  const std::string& procs_file() const { return procs_file_; }

 private:
  std::string dir_, procs_file_;
};

}  // namespace fake_opensandbox
