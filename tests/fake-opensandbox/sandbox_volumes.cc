#include "tests/fake-opensandbox/sandbox_volumes.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstdlib>
#include <regex>

#include "tests/fake-opensandbox/sandbox_paths.h"
#include "tests/fake-opensandbox/sandbox_registry.h"

namespace fake_opensandbox {
namespace {

const std::regex& DnsLabel() {
  static const std::regex pattern("^[a-z0-9]([-a-z0-9]*[a-z0-9])?$");
  return pattern;
}

VolumeRefusal BadRequest(const std::string& code, const std::string& message) {
  return VolumeRefusal{400, code, message};
}

// Python's repr of a list of strings, as the allowlist refusal prints it.
std::string PythonList(const std::vector<std::string>& items) {
  std::string out = "[";
  for (size_t i = 0; i < items.size(); ++i) out += (i ? ", '" : "'") + items[i] + "'";
  return out + "]";
}

bool UnderPrefix(const std::string& path, const std::vector<std::string>& prefixes) {
  for (std::string prefix : prefixes) {
    while (prefix.size() > 1 && prefix.back() == '/') prefix.pop_back();
    if (path == prefix || path.rfind(prefix == "/" ? "/" : prefix + "/", 0) == 0) return true;
  }
  return false;
}

std::optional<VolumeRefusal> CheckHostPath(const std::string& path,
                                           const std::vector<std::string>& prefixes) {
  const std::string code = "VOLUME::INVALID_HOST_PATH";
  if (path.empty()) return BadRequest(code, "Host path cannot be empty.");
  static const std::regex absolute("^(/|[A-Za-z]:[\\\\/])");
  if (!std::regex_search(path, absolute)) {
    return BadRequest(code, "Host path '" + path +
                                "' must be an absolute path starting with '/' or a Windows drive "
                                "letter (e.g. 'C:\\' or 'D:/').");
  }
  // A substring test, as upstream's: "/a/..b" is refused too.
  if (path.find("/..") != std::string::npos) {
    return BadRequest(code, "Host path '" + path + "' contains path traversal component '..'.");
  }
  if (path.find("//") != std::string::npos || (path.size() > 1 && path.back() == '/')) {
    return BadRequest(code, "Host path '" + path + "' is not normalized. Remove redundant slashes.");
  }
  if (!UnderPrefix(path, prefixes)) {
    return BadRequest("VOLUME::HOST_PATH_NOT_ALLOWED", "Host path '" + path +
                                                           "' is not under any allowed prefix. "
                                                           "Allowed prefixes: " +
                                                           PythonList(prefixes));
  }
  return std::nullopt;
}

std::optional<VolumeRefusal> CheckOne(const VolumeSpec& v, const std::vector<std::string>& prefixes) {
  if (v.name.empty()) return BadRequest("VOLUME::INVALID_NAME", "Volume name cannot be empty.");
  if (v.name.size() > 63) {
    return BadRequest("VOLUME::INVALID_NAME",
                      "Volume name '" + v.name + "' exceeds maximum length of 63 characters.");
  }
  if (!std::regex_match(v.name, DnsLabel())) {
    return BadRequest("VOLUME::INVALID_NAME",
                      "Volume name '" + v.name +
                          "' is not a valid DNS label. Must be lowercase alphanumeric with "
                          "optional hyphens.");
  }
  if (v.mount_path.empty()) return BadRequest("VOLUME::INVALID_MOUNT_PATH", "Mount path cannot be empty.");
  if (v.mount_path[0] != '/') {
    return BadRequest("VOLUME::INVALID_MOUNT_PATH",
                      "Mount path '" + v.mount_path + "' must be an absolute path starting with '/'.");
  }
  if (!v.sub_path.empty()) {
    if (v.sub_path[0] == '/') {
      return BadRequest("VOLUME::INVALID_SUB_PATH",
                        "SubPath '" + v.sub_path + "' must be a relative path, not absolute.");
    }
    size_t start = 0;
    while (start <= v.sub_path.size()) {
      size_t slash = v.sub_path.find('/', start);
      if (slash == std::string::npos) slash = v.sub_path.size();
      if (v.sub_path.compare(start, slash - start, "..") == 0 && slash - start == 2) {
        return BadRequest("VOLUME::INVALID_SUB_PATH",
                          "SubPath '" + v.sub_path + "' contains path traversal '..' which is not allowed.");
      }
      start = slash + 1;
    }
  }
  switch (v.backend) {
    case VolumeSpec::Backend::kHost:
      return CheckHostPath(v.host_path, prefixes);
    case VolumeSpec::Backend::kPvc:
      if (v.claim_name.empty()) return BadRequest("VOLUME::INVALID_PVC_NAME", "PVC claim name cannot be empty.");
      if (v.claim_name.size() > 253 || !std::regex_match(v.claim_name, DnsLabel())) {
        return BadRequest("VOLUME::INVALID_PVC_NAME",
                          "PVC claim name '" + v.claim_name + "' is not a valid Kubernetes resource name.");
      }
      return std::nullopt;
    case VolumeSpec::Backend::kOssfs: {
      auto blank = [](const std::string& s) { return s.find_first_not_of(" \t\r\n") == std::string::npos; };
      if (blank(v.bucket)) return BadRequest("VOLUME::INVALID_OSSFS_BUCKET", "OSSFS bucket cannot be empty.");
      if (blank(v.endpoint)) return BadRequest("VOLUME::INVALID_OSSFS_ENDPOINT", "OSSFS endpoint cannot be empty.");
      for (const auto& option : v.options) {
        if (blank(option)) {
          return BadRequest("VOLUME::INVALID_OSSFS_OPTION", "OSSFS options must be non-empty strings.");
        }
        if (option[0] == '-') {
          return BadRequest("VOLUME::INVALID_OSSFS_OPTION",
                            "OSSFS options must be raw option payloads without '-' prefix (e.g. "
                            "'allow_other', 'uid=1000').");
        }
      }
      if (!v.has_credentials) {
        return BadRequest("VOLUME::INVALID_OSSFS_CREDENTIALS",
                          "OSSFS inline credentials are required: accessKeyId and accessKeySecret "
                          "must be provided.");
      }
      return std::nullopt;
    }
  }
  return std::nullopt;
}

// os.makedirs(exist_ok=True); the name of the Python exception on failure.
const char* MakeDirs(const std::string& path) {
  std::string partial;
  size_t start = 1;
  while (start <= path.size()) {
    size_t slash = path.find('/', start);
    if (slash == std::string::npos) slash = path.size();
    partial = path.substr(0, slash);
    start = slash + 1;
    if (mkdir(partial.c_str(), 0755) == 0 || errno == EEXIST) continue;
    return errno == EACCES || errno == EPERM ? "PermissionError" : "OSError";
  }
  struct stat st;
  if (stat(path.c_str(), &st) != 0) return "FileNotFoundError";
  return S_ISDIR(st.st_mode) ? nullptr : "FileExistsError";
}

std::string Joined(const std::string& base, const std::string& sub_path) {
  if (sub_path.empty()) return base;
  bool escaped = false;
  const std::string sub = CleanAbsolutePath("/" + sub_path, &escaped);
  return base == "/" ? sub : base + sub;
}

}  // namespace

bool MakeMountPoint(const std::string& sandbox_root, const VolumeMount& mount) {
  struct stat st;
  const bool file = stat(mount.host_dir.c_str(), &st) == 0 && !S_ISDIR(st.st_mode);
  // Component by component with lstat: a symlink is never followed out of the root.
  std::string at = sandbox_root;
  size_t start = 1;
  while (start <= mount.sandbox_path.size()) {
    size_t slash = mount.sandbox_path.find('/', start);
    if (slash == std::string::npos) slash = mount.sandbox_path.size();
    at += "/" + mount.sandbox_path.substr(start, slash - start);
    const bool last = slash == mount.sandbox_path.size();
    start = slash + 1;
    if (lstat(at.c_str(), &st) == 0) {
      if (S_ISLNK(st.st_mode) || (!S_ISDIR(st.st_mode) && !(last && file))) return false;
      continue;
    }
    if (last && file) {
      const int fd = open(at.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
      if (fd < 0) return false;
      close(fd);
    } else if (mkdir(at.c_str(), 0755) != 0) {
      return false;
    }
  }
  return true;
}

std::optional<VolumeRefusal> CheckVolumes(const std::vector<VolumeSpec>& volumes,
                                          const std::vector<std::string>& allowed_host_prefixes) {
  std::set<std::string> names;
  for (const VolumeSpec& v : volumes) {
    if (!names.insert(v.name).second) {
      return BadRequest("VOLUME::DUPLICATE_NAME",
                        "Duplicate volume name '" + v.name + "'. Each volume must have a unique name.");
    }
    if (auto refused = CheckOne(v, allowed_host_prefixes)) return refused;
  }
  return std::nullopt;
}

VolumeStore::VolumeStore(std::string dir) : dir_(std::move(dir)) { MakeDirs(dir_); }

std::optional<VolumeRefusal> VolumeStore::Resolve(const std::vector<VolumeSpec>& volumes,
                                                  std::vector<VolumeMount>* mounts,
                                                  std::vector<std::string>* delete_with_sandbox) {
  std::lock_guard<std::mutex> lock(mutex_);
  std::vector<std::string> made;  // named volumes this call created, undone on a refusal
  auto refuse = [&](VolumeRefusal refusal) {
    for (const auto& claim : made) RemoveTreeQuietly(dir_ + "/" + claim);
    mounts->clear();
    delete_with_sandbox->clear();
    return std::optional<VolumeRefusal>(std::move(refusal));
  };
  bool escaped = false;
  for (const VolumeSpec& v : volumes) {
    VolumeMount mount;
    mount.sandbox_path = CleanAbsolutePath(v.mount_path, &escaped);
    mount.read_only = v.read_only;
    switch (v.backend) {
      case VolumeSpec::Backend::kHost: {
        mount.host_dir = Joined(v.host_path, v.sub_path);
        struct stat st;
        const bool is_file = stat(mount.host_dir.c_str(), &st) == 0 && !S_ISDIR(st.st_mode);
        if (!is_file) {
          if (const char* failure = MakeDirs(mount.host_dir)) {
            return refuse({500, "VOLUME::HOST_PATH_CREATE_FAILED",
                           "Volume '" + v.name + "': could not ensure host path directory exists at '" +
                               mount.host_dir + "': " + failure});
          }
        }
        break;
      }
      case VolumeSpec::Backend::kPvc: {
        const std::string volume_dir = dir_ + "/" + v.claim_name;
        struct stat st;
        if (stat(volume_dir.c_str(), &st) != 0) {
          if (!v.create_if_not_exists) {
            return refuse(BadRequest(
                "VOLUME::PVC_NOT_FOUND",
                "Volume '" + v.name + "': Docker named volume '" + v.claim_name +
                    "' does not exist. Named volumes must be created before sandbox creation "
                    "(e.g., 'docker volume create <name>')."));
          }
          if (mkdir(volume_dir.c_str(), 0755) != 0 && errno != EEXIST) {
            return refuse({500, "VOLUME::PVC_INSPECT_FAILED",
                           "Volume '" + v.name + "': failed to auto-create Docker named volume '" +
                               v.claim_name + "'"});
          }
          made.push_back(v.claim_name);
          if (v.delete_on_termination) delete_with_sandbox->push_back(v.claim_name);
        }
        // A bind of a missing source directory creates it, as Docker's binds do.
        mount.host_dir = Joined(volume_dir, v.sub_path);
        MakeDirs(mount.host_dir);
        break;
      }
      case VolumeSpec::Backend::kOssfs: {
        static const std::regex bucket("^[a-z0-9]([a-z0-9-]{1,61}[a-z0-9])?$");
        if (!std::regex_match(v.bucket, bucket)) {
          return refuse(BadRequest("SANDBOX::INVALID_PARAMETER", "Invalid OSSFS bucket name '" + v.bucket + "'."));
        }
        // This server has no ossfs binary: the mount command cannot start.
        const std::string program = v.version == "1.0" ? "ossfs" : "ossfs2";
        return refuse({500, "VOLUME::OSSFS_MOUNT_FAILED",
                       "Volume '" + v.name + "': failed to execute ossfs command: [Errno 2] No such "
                       "file or directory: '" + program + "'"});
      }
    }
    mounts->push_back(std::move(mount));
  }
  return std::nullopt;
}

void VolumeStore::Release(const std::vector<std::string>& claim_names) {
  std::lock_guard<std::mutex> lock(mutex_);
  for (const auto& claim : claim_names) RemoveTreeQuietly(dir_ + "/" + claim);
}

}  // namespace fake_opensandbox
