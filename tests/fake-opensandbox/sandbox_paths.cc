#include "tests/fake-opensandbox/sandbox_paths.h"

#include <cctype>
#include <cstdlib>
#include <vector>

namespace fake_opensandbox {
namespace {

bool IsVarChar(char c) { return isalnum(static_cast<unsigned char>(c)) || c == '_'; }

// os.ExpandEnv with an optional "undefined is an error" rule.
bool ExpandVars(const std::string& in, bool strict, std::string* out, std::string* error) {
  out->clear();
  for (size_t i = 0; i < in.size(); ++i) {
    if (in[i] != '$' || i + 1 >= in.size()) {
      out->push_back(in[i]);
      continue;
    }
    std::string name;
    size_t j = i + 1;
    if (in[j] == '{') {
      size_t close = in.find('}', j);
      if (close == std::string::npos) {
        out->append(in, i, std::string::npos);
        return true;
      }
      name = in.substr(j + 1, close - j - 1);
      i = close;
    } else {
      while (j < in.size() && IsVarChar(in[j])) name.push_back(in[j++]);
      if (name.empty()) {
        out->push_back('$');
        continue;
      }
      i = j - 1;
    }
    const char* value = getenv(name.c_str());
    if (!value && strict) {
      *error = "environment variable not defined: " + name;
      return false;
    }
    if (value) out->append(value);
  }
  return true;
}

}  // namespace

std::string CleanAbsolutePath(const std::string& path, bool* escaped) {
  *escaped = false;
  std::vector<std::string> parts;
  size_t i = 0;
  while (i <= path.size()) {
    size_t slash = path.find('/', i);
    if (slash == std::string::npos) slash = path.size();
    std::string part = path.substr(i, slash - i);
    i = slash + 1;
    if (part.empty() || part == ".") continue;
    if (part == "..") {
      if (parts.empty()) {
        *escaped = true;
      } else {
        parts.pop_back();
      }
      continue;
    }
    parts.push_back(part);
  }
  std::string out;
  for (const auto& part : parts) out += "/" + part;
  return out.empty() ? "/" : out;
}

SandboxPaths::SandboxPaths(std::string host_root, std::vector<VolumeMount> mounts)
    : root_(std::move(host_root)), mounts_(std::move(mounts)) {
  while (root_.size() > 1 && root_.back() == '/') root_.pop_back();
}

namespace {

// `path` is `prefix` or below it ("/a" covers "/a" and "/a/b", not "/ab").
bool Covers(const std::string& prefix, const std::string& path) {
  if (prefix == "/") return true;
  return path.compare(0, prefix.size(), prefix) == 0 &&
         (path.size() == prefix.size() || path[prefix.size()] == '/');
}

}  // namespace

bool SandboxPaths::Map(const std::string& path, bool strict_vars, Mapped* out,
                       std::string* error) const {
  std::string expanded = path;
  if (expanded == "~" || expanded.rfind("~/", 0) == 0) expanded = "/root" + expanded.substr(1);
  std::string with_vars;
  if (!ExpandVars(expanded, strict_vars, &with_vars, error)) return false;
  if (with_vars.empty() || with_vars[0] != '/') with_vars = "/" + with_vars;
  bool escaped = false;
  out->sandbox = CleanAbsolutePath(with_vars, &escaped);
  if (escaped) {
    *error = "path escapes the sandbox root: " + path;
    return false;
  }
  out->host = HostOf(out->sandbox, &out->read_only, &out->mount_point);
  return true;
}

std::string SandboxPaths::HostOf(const std::string& sandbox_path, bool* read_only, bool* mount_point) const {
  if (read_only) *read_only = false;
  if (mount_point) *mount_point = false;
  // The innermost mount wins, as the kernel's mount table does.
  const VolumeMount* over = nullptr;
  for (const VolumeMount& mount : mounts_) {
    if (Covers(mount.sandbox_path, sandbox_path) &&
        (!over || mount.sandbox_path.size() > over->sandbox_path.size())) {
      over = &mount;
    }
  }
  // /proc is the host's, as the jail of every command binds it (README, "Paths").
  if (!over && Covers("/proc", sandbox_path)) return sandbox_path;
  if (!over) return sandbox_path == "/" ? root_ : root_ + sandbox_path;
  if (read_only) *read_only = over->read_only;
  if (mount_point) *mount_point = over->sandbox_path == sandbox_path;
  return over->host_dir + sandbox_path.substr(over->sandbox_path == "/" ? 0 : over->sandbox_path.size());
}

std::string SandboxPaths::ToSandbox(const std::string& host_path) const {
  // The longest host directory that holds the path: a volume's, or the root's.
  const VolumeMount* over = nullptr;
  for (const VolumeMount& mount : mounts_) {
    if (Covers(mount.host_dir, host_path) && (!over || mount.host_dir.size() > over->host_dir.size())) {
      over = &mount;
    }
  }
  if (over && over->host_dir.size() >= root_.size()) {
    const std::string rest = over->host_dir == "/" ? host_path : host_path.substr(over->host_dir.size());
    return over->sandbox_path == "/" ? (rest.empty() ? "/" : rest) : over->sandbox_path + rest;
  }
  if (host_path == root_) return "/";
  if (host_path.size() > root_.size() && host_path.compare(0, root_.size(), root_) == 0 &&
      host_path[root_.size()] == '/') {
    return host_path.substr(root_.size());
  }
  return host_path;
}

}  // namespace fake_opensandbox
