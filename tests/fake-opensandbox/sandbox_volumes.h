#pragma once

// Volumes of a create request (docs/opensandbox.md §1.13), as upstream's Docker runtime
// treats them:
//   * the service's own checks, after pydantic's (create_request.cc): 400 VOLUME::*
//     in upstream's order (services/validators.py, ensure_volumes_valid);
//   * what the runtime does with each backend (services/docker/volumes.py): a `host`
//     directory under an allowed prefix, created when missing; a `pvc` as a named
//     directory of this server that outlives the sandbox (Docker's named volume);
//     `ossfs` refused as a server without the ossfs binary refuses it (500).
// The fake has no container, so a volume is not mounted on this host: the sandbox's
// paths under a mount path map to the volume's directory (sandbox_paths.h) and its
// commands get it bound in their own mount namespace (child_process.cc).

#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace fake_opensandbox {

struct VolumeSpec {
  enum class Backend { kHost, kPvc, kOssfs };
  std::string name;
  std::string mount_path;
  bool read_only = false;
  std::string sub_path;
  Backend backend = Backend::kHost;
  std::string host_path;                // kHost
  std::string claim_name;               // kPvc
  bool create_if_not_exists = true;     // kPvc
  bool delete_on_termination = false;   // kPvc
  std::string bucket, endpoint, version = "2.0";  // kOssfs
  std::vector<std::string> options;               // kOssfs
  bool has_credentials = false;                   // kOssfs: both keys given
};

// What a sandbox sees: `sandbox_path` (a cleaned absolute path) is `host_dir`.
struct VolumeMount {
  std::string sandbox_path;
  std::string host_dir;
  bool read_only = false;
};

struct VolumeRefusal {
  int status = 0;
  std::string code;
  std::string message;
};

// The service's checks; `allowed_host_prefixes` empty refuses every host volume (the
// default of upstream's storage.allowed_host_paths).
std::optional<VolumeRefusal> CheckVolumes(const std::vector<VolumeSpec>& volumes,
                                          const std::vector<std::string>& allowed_host_prefixes);

// Makes `mount`'s mount point under a sandbox's root: a directory, or an empty file
// where the volume is a file. False when a part of the path is a symlink or a file (a
// restored sandbox's own files): nothing outside the root is ever made.
bool MakeMountPoint(const std::string& sandbox_root, const VolumeMount& mount);

// The named volumes (`pvc`) of this server: directories under `dir`, outside every
// sandbox root, so that they outlive the sandboxes that use them.
class VolumeStore {
 public:
  explicit VolumeStore(std::string dir);

  // The mounts of one sandbox, in request order; on a refusal nothing this call created
  // is left. `*created` lists the named volumes made here and marked for deletion with
  // the sandbox (deleteOnSandboxTermination).
  std::optional<VolumeRefusal> Resolve(const std::vector<VolumeSpec>& volumes,
                                       std::vector<VolumeMount>* mounts,
                                       std::vector<std::string>* delete_with_sandbox);
  // Removes the named volumes a terminated sandbox's create made for it.
  void Release(const std::vector<std::string>& claim_names);

 private:
  const std::string dir_;
  std::mutex mutex_;
};

}  // namespace fake_opensandbox
