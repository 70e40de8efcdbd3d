#pragma once
// Volumes a sandbox.create mounts (provider_options.volumes; docs/epp1.md §3): the
// server's `volumes` in snake_case, checked by the server's own rules before anything is
// sent (docs/opensandbox.md §1.13), so that a bad volume is -32602 naming its field rather
// than the server's 400 or 422 after a round trip. An OSS access key secret is a secret:
// it goes into the create request's body and nowhere else.

#include <optional>
#include <string>
#include <vector>

#include "bridge/base/error.h"

namespace abx::core {

struct Volume {
  std::string name;
  std::string mount_path;
  std::optional<bool> read_only;
  std::string sub_path;
  struct Host {
    std::string path;
  };
  struct Pvc {
    std::string claim_name;
    std::optional<bool> create_if_not_exists;
    std::optional<bool> delete_on_sandbox_termination;
    std::optional<std::string> storage_class;
    std::optional<std::string> storage;
    std::optional<std::vector<std::string>> access_modes;
  };
  struct Ossfs {
    std::string bucket;
    std::string endpoint;
    std::string access_key_id;
    std::string access_key_secret;  // secret
    std::optional<std::string> version;  // "1.0" or "2.0"
    std::optional<std::vector<std::string>> options;
  };
  std::optional<Host> host;
  std::optional<Pvc> pvc;
  std::optional<Ossfs> ossfs;
};

// -32602 for the first volume that breaks a rule, with `field` such as
// "volumes[0].host.path" (the caller adds its own prefix).
Status CheckVolumes(const std::vector<Volume>& volumes);

// The request's `volumes` value: a JSON array in the server's camelCase.
std::string VolumesJson(const std::vector<Volume>& volumes);

}  // namespace abx::core
