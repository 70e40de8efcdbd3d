#include "common/file_pages.h"

#include <sys/mman.h>

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

namespace abx {
namespace {

struct Mapping {
  uintptr_t start = 0;
  uintptr_t end = 0;
  bool eligible = false;  // private, not writable, backed by a file
  size_t resident_kib = 0;
  size_t anonymous_kib = 0;
};

// smaps: a header line per mapping ("start-end perms offset dev inode path"), then
// "Key: value kB" lines.
std::vector<Mapping> ReadMappings() {
  std::vector<Mapping> out;
  std::ifstream smaps("/proc/self/smaps");
  std::string line;
  while (std::getline(smaps, line)) {
    unsigned long long start = 0, end = 0;
    char perms[8] = {};
    int path_at = -1;
    if (std::sscanf(line.c_str(), "%llx-%llx %7s %*s %*s %*s %n", &start, &end, perms, &path_at) >= 3 &&
        path_at > 0) {
      Mapping m;
      m.start = static_cast<uintptr_t>(start);
      m.end = static_cast<uintptr_t>(end);
      const bool has_file = static_cast<size_t>(path_at) < line.size() && line[path_at] == '/';
      m.eligible = has_file && perms[0] == 'r' && perms[1] != 'w' && perms[3] == 'p';
      out.push_back(m);
      continue;
    }
    if (out.empty()) continue;
    size_t kib = 0;
    if (std::sscanf(line.c_str(), "Rss: %zu kB", &kib) == 1) out.back().resident_kib = kib;
    if (std::sscanf(line.c_str(), "Anonymous: %zu kB", &kib) == 1) out.back().anonymous_kib = kib;
  }
  return out;
}

}  // namespace

ReleasedFilePages ReleaseCleanFilePages() {
  ReleasedFilePages released;
  for (const Mapping& m : ReadMappings()) {
    if (!m.eligible || m.anonymous_kib != 0 || m.resident_kib == 0) continue;
    if (madvise(reinterpret_cast<void*>(m.start), m.end - m.start, MADV_DONTNEED) != 0) continue;
    ++released.mappings;
    released.resident_bytes += m.resident_kib * 1024;
  }
  return released;
}

}  // namespace abx
