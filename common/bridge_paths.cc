#include "common/bridge_paths.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>

#include "common/platform.h"

namespace abx {
namespace {

constexpr size_t kBuildIdPrefixLength = 12;
constexpr char kSocketSuffix[] = ".sock";
constexpr char kSubdirectory[] = "abx-opensandbox";
// "/abx-opensandbox/bridge-<12>.sock" plus room for the "-<12>" of SocketPathForBuild.
constexpr size_t kLongestNameBelowRuntimeDir = 1 + 15 + 1 + 7 + 12 + 13 + 5;

bool EndsWith(const std::string& text, const std::string& suffix) {
  return text.size() >= suffix.size() &&
         text.compare(text.size() - suffix.size(), suffix.size(), suffix) == 0;
}

std::string StripSocketSuffix(const std::string& path) {
  return EndsWith(path, kSocketSuffix) ? path.substr(0, path.size() - (sizeof(kSocketSuffix) - 1))
                                       : path;
}

bool UsableRuntimeDir(const std::string& dir) {
  if (dir.empty() || dir[0] != '/') return false;
  if (dir.size() + kLongestNameBelowRuntimeDir > kMaxUnixSocketPathLength) return false;
  struct stat st;
  if (stat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) return false;
  if (st.st_uid != geteuid()) return false;
  return access(dir.c_str(), W_OK | X_OK) == 0;
}

}  // namespace

std::string DefaultSocketDir() {
  const char* runtime_dir = getenv("XDG_RUNTIME_DIR");
  if (runtime_dir != nullptr && UsableRuntimeDir(runtime_dir)) {
    std::string dir = runtime_dir;
    while (dir.size() > 1 && dir.back() == '/') dir.pop_back();
    return dir + "/" + kSubdirectory;
  }
  return std::string("/tmp/") + kSubdirectory + "-" + std::to_string(geteuid());
}

std::string DefaultSocketPath(const std::string& build_id) {
  return DefaultSocketDir() + "/bridge-" + build_id.substr(0, kBuildIdPrefixLength) +
         kSocketSuffix;
}

std::string ResolveSocketPath(const std::string& build_id) {
  const char* explicit_path = getenv(kBridgeSocketEnv);
  if (explicit_path != nullptr && explicit_path[0] != '\0') return explicit_path;
  return DefaultSocketPath(build_id);
}

std::string SocketPathForBuild(const std::string& socket_path, const std::string& build_id) {
  return StripSocketSuffix(socket_path) + "-" + build_id.substr(0, kBuildIdPrefixLength) +
         kSocketSuffix;
}

std::string LockPathFor(const std::string& socket_path) { return socket_path + ".lock"; }

std::string LogPathFor(const std::string& socket_path) {
  if (EndsWith(socket_path, kSocketSuffix)) return StripSocketSuffix(socket_path) + ".log";
  return socket_path + ".log";
}

std::string SocketDirOf(const std::string& socket_path) {
  size_t slash = socket_path.find_last_of('/');
  if (slash == std::string::npos) return ".";
  if (slash == 0) return "/";
  return socket_path.substr(0, slash);
}

}  // namespace abx
