#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "tests/fake-opensandbox/execd_routes.h"
#include "tests/fake-opensandbox/file_info.h"

namespace fake_opensandbox {

bool MapPathOrReject(ExecdContext* context, const std::string& path,
                     SandboxPaths::Mapped* mapped, httplib::Response& res) {
  std::string error;
  if (context->paths.Map(path, /*strict_vars=*/false, mapped, &error)) return true;
  SendExecdError(res, 400, "INVALID_REQUEST_BODY", error);
  return false;
}

bool MapWritablePathOrReject(ExecdContext* context, const std::string& path, const char* what,
                             SandboxPaths::Mapped* mapped, httplib::Response& res) {
  if (!MapPathOrReject(context, path, mapped, res)) return false;
  if (!mapped->read_only) return true;
  SendExecdError(res, 500, "RUNTIME_ERROR",
                 std::string("error ") + what + " " + path + ": read-only file system");  // Go's EROFS text
  return false;
}

bool RefuseMountPoint(const SandboxPaths::Mapped& mapped, const std::string& path, const char* what,
                      httplib::Response& res) {
  if (!mapped.mount_point) return false;
  SendExecdError(res, 500, "RUNTIME_ERROR", std::string("error ") + what + " " + path + ": device or resource busy");
  return true;
}

bool MakeDirectories(const std::string& host_path, mode_t mode) {
  if (host_path.empty()) return true;
  struct stat st;
  if (stat(host_path.c_str(), &st) == 0) {
    if (S_ISDIR(st.st_mode)) return true;
    errno = ENOTDIR;
    return false;
  }
  size_t slash = host_path.find_last_of('/');
  if (slash != std::string::npos && slash > 0) {
    if (!MakeDirectories(host_path.substr(0, slash), mode)) return false;
  }
  if (mkdir(host_path.c_str(), mode) != 0 && errno != EEXIST) return false;
  return true;
}

bool ApplyOwnershipAndMode(const std::string& host_path, const std::string& owner,
                           const std::string& group, long long mode_decimal,
                           const ExecdRelease& release, std::string* error) {
  if (mode_decimal != 0) {
    mode_t mode;
    if (!DecimalOctalToMode(mode_decimal, &mode)) {
      *error = "invalid mode " + std::to_string(mode_decimal);
      return false;
    }
    if (chmod(host_path.c_str(), mode) != 0) {
      *error = "chmod: " + std::string(strerror(errno));
      return false;
    }
  }
  uid_t uid = static_cast<uid_t>(-1);
  gid_t gid = static_cast<gid_t>(-1);
  const bool user_known = owner.empty() || LookupUser(owner, &uid);
  const bool group_known = group.empty() || LookupGroup(group, &gid);
  if (release.chown_only_named) {  // utils.go SetFileOwnership at v1.0.19
    if (!user_known) {
      *error = "failed to lookup user " + owner + ": user: unknown user " + owner;
      return false;
    }
    if (!group_known) {
      *error = "failed to lookup group " + group + ": group: unknown group " + group;
      return false;
    }
    if (owner.empty() && group.empty()) return true;
  } else if (uid == static_cast<uid_t>(-1) && gid == static_cast<gid_t>(-1)) {
    // utils.go SetFileOwnership at v1.0.18: unknown names were only logged, and with no
    // id found the file went to execd's own user.
    uid = getuid();
    gid = getgid();
  }
  if (chown(host_path.c_str(), uid, gid) != 0) {
    *error = std::string("failed to set owner/group: ") + strerror(errno);
    return false;
  }
  return true;
}

}  // namespace fake_opensandbox
