#include "tests/fake-opensandbox/sandbox_cgroup.h"

#include <dirent.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <mutex>

namespace fake_opensandbox {
namespace {

constexpr long kPeriodUs = 100000;  // the kernel's default CFS period, as Docker keeps it

bool Exists(const std::string& path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0;
}

bool Write(const std::string& path, const std::string& text, std::string* error) {
  std::ofstream out(path);
  out << text;
  out.flush();
  if (!out) {
    *error = "write " + path + ": " + std::strerror(errno);
    return false;
  }
  return true;
}

bool Contains(const std::string& path, const std::string& word) {
  std::ifstream in(path);
  std::string w;
  while (in >> w) {
    if (w == word) return true;
  }
  return false;
}

// Groups a fake left when it was killed (named after its pid, which no process has now):
// empty once their sandboxes' processes died with it, so they can go.
void RemoveGroupsOfEndedFakes() {
  for (const char* parent : {"/sys/fs/cgroup/cpu", "/sys/fs/cgroup"}) {
    DIR* dir = ::opendir(parent);
    if (!dir) continue;
    while (const dirent* entry = ::readdir(dir)) {
      const std::string name = entry->d_name;
      static const std::string kPrefix = "fake-opensandbox-";
      if (name.compare(0, kPrefix.size(), kPrefix) != 0) continue;
      const pid_t pid = static_cast<pid_t>(std::atol(name.c_str() + kPrefix.size()));
      if (pid <= 0 || ::kill(pid, 0) == 0 || errno != ESRCH) continue;
      ::rmdir((std::string(parent) + "/" + name).c_str());
    }
    ::closedir(dir);
  }
}

}  // namespace

std::optional<double> ParseCpuLimit(const std::string& value) {
  // value.strip().lower(), an "m" suffix for millicores, then Python's float().
  const size_t first = value.find_first_not_of(" \t\n\r\f\v");
  if (first == std::string::npos) return std::nullopt;
  std::string number = value.substr(first, value.find_last_not_of(" \t\n\r\f\v") - first + 1);
  for (char& c : number) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  double scale = 1;
  if (number.back() == 'm') {
    number.pop_back();
    scale = 0.001;
    while (!number.empty() && std::isspace(static_cast<unsigned char>(number.back()))) number.pop_back();
  }
  // float() reads decimal notation only, never hexadecimal.
  if (number.empty() || number.find_first_not_of("0123456789.+-e") != std::string::npos) return std::nullopt;
  char* end = nullptr;
  const double parsed = std::strtod(number.c_str(), &end);
  if (end != number.c_str() + number.size() || !std::isfinite(parsed)) return std::nullopt;
  const double cpus = parsed * scale;
  if (cpus <= 0) return std::nullopt;  // "must be positive", ignored
  return cpus;
}

std::unique_ptr<SandboxCgroup> SandboxCgroup::Create(const std::string& sandbox_id, double cpus, std::string* error) {
  static std::once_flag swept;
  std::call_once(swept, RemoveGroupsOfEndedFakes);
  const std::string name = "fake-opensandbox-" + std::to_string(::getpid()) + "-" + sandbox_id;
  const long quota = std::max<long>(1000, std::lround(cpus * kPeriodUs));  // the kernel's minimum is 1 ms
  std::unique_ptr<SandboxCgroup> group(new SandboxCgroup());
  if (Exists("/sys/fs/cgroup/cpu/cpu.cfs_quota_us")) {  // v1: the cpu hierarchy
    group->dir_ = "/sys/fs/cgroup/cpu/" + name;
    if (::mkdir(group->dir_.c_str(), 0755) != 0) {
      *error = "mkdir " + group->dir_ + ": " + std::strerror(errno);
      group->dir_.clear();
      return nullptr;
    }
    group->procs_file_ = group->dir_ + "/cgroup.procs";
    if (!Write(group->dir_ + "/cpu.cfs_period_us", std::to_string(kPeriodUs), error) ||
        !Write(group->dir_ + "/cpu.cfs_quota_us", std::to_string(quota), error)) {
      return nullptr;  // the destructor removes the directory
    }
    return group;
  }
  if (Contains("/sys/fs/cgroup/cgroup.controllers", "cpu")) {  // v2, from the root group
    // The root group hands the cpu controller down (left on: other groups may use it).
    if (!Contains("/sys/fs/cgroup/cgroup.subtree_control", "cpu") &&
        !Write("/sys/fs/cgroup/cgroup.subtree_control", "+cpu", error)) {
      return nullptr;
    }
    group->dir_ = "/sys/fs/cgroup/" + name;
    if (::mkdir(group->dir_.c_str(), 0755) != 0) {
      *error = "mkdir " + group->dir_ + ": " + std::strerror(errno);
      group->dir_.clear();
      return nullptr;
    }
    group->procs_file_ = group->dir_ + "/cgroup.procs";
    if (!Write(group->dir_ + "/cpu.max", std::to_string(quota) + " " + std::to_string(kPeriodUs), error)) {
      return nullptr;
    }
    return group;
  }
  *error = "the host has no cpu controller this process can use";
  return nullptr;
}

SandboxCgroup::~SandboxCgroup() {
  if (dir_.empty()) return;
  // The kernel lets a group go once its last process has been reaped, a moment after
  // the process ends.
  for (int i = 0; i < 200; ++i) {
    if (::rmdir(dir_.c_str()) == 0 || errno == ENOENT) return;
    if (errno != EBUSY) break;
    ::usleep(5000);
  }
  std::fprintf(stderr, "fake-opensandbox: cannot remove the control group %s: %s\n", dir_.c_str(), std::strerror(errno));
}

}  // namespace fake_opensandbox
