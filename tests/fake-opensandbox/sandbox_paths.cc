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

SandboxPaths::SandboxPaths(std::string host_root) : root_(std::move(host_root)) {
  while (root_.size() > 1 && root_.back() == '/') root_.pop_back();
}

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
  out->host = out->sandbox == "/" ? root_ : root_ + out->sandbox;
  return true;
}

std::string SandboxPaths::ToSandbox(const std::string& host_path) const {
  if (host_path == root_) return "/";
  if (host_path.size() > root_.size() && host_path.compare(0, root_.size(), root_) == 0 &&
      host_path[root_.size()] == '/') {
    return host_path.substr(root_.size());
  }
  return host_path;
}

}  // namespace fake_opensandbox
