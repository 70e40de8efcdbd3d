#pragma once

// Maps the paths a client names inside a sandbox onto the sandbox's directory on this
// host: "/a/b" -> "<root>/a/b". Like execd, "~" and $VAR / ${VAR} are expanded first
// ("~" is /root, the home of a container's root user) and relative paths count from "/".
// The path is cleaned lexically; one that climbs above "/" with ".." is refused rather
// than clamped, so a client bug shows up instead of silently touching another file.
// (Symlinks created inside the sandbox are not confined: there is no isolation.)
// A path at or under a volume's mount path maps into the volume's directory instead
// (sandbox_volumes.h), as the container's bind mount would show it. /proc and below map
// to the host's /proc, which is what commands see there (the fake has no PID namespace).

#include <string>
#include <vector>

#include "tests/fake-opensandbox/sandbox_volumes.h"

namespace fake_opensandbox {

class SandboxPaths {
 public:
  explicit SandboxPaths(std::string host_root, std::vector<VolumeMount> mounts = {});

  struct Mapped {
    std::string host;     // where it lives on this host
    std::string sandbox;  // the cleaned absolute path as the sandbox sees it
    bool read_only = false;    // on a read-only volume: writes fail with EROFS
    bool mount_point = false;  // a volume's mount path itself: it cannot be removed or moved
  };

  // `strict_vars`: an undefined $VAR is an error (execd's rule for cwd); otherwise it
  // expands to "" (os.ExpandEnv). Returns false with a message on error.
  bool Map(const std::string& path, bool strict_vars, Mapped* out, std::string* error) const;

  // Where a cleaned absolute sandbox path lives on this host (no expansion); sets
  // *read_only when that is on a read-only volume.
  std::string HostOf(const std::string& sandbox_path, bool* read_only = nullptr,
                     bool* mount_point = nullptr) const;

  // The sandbox view of a host path under the root ("<root>/x" -> "/x").
  std::string ToSandbox(const std::string& host_path) const;

  const std::string& host_root() const { return root_; }
  const std::vector<VolumeMount>& mounts() const { return mounts_; }

 private:
  std::string root_;  // no trailing slash
  std::vector<VolumeMount> mounts_;
};

// Go's path.Clean for absolute paths; sets *escaped when ".." climbs above "/".
std::string CleanAbsolutePath(const std::string& path, bool* escaped);

}  // namespace fake_opensandbox
