#pragma once
// FNV-1a over texts, each followed by a byte no text holds, so that ("ab", "c") and
// ("a", "bc") differ: short stable names the bridge leaves on the server or in a sandbox
// (pool keys, the owner of watch hosts) for parts that must not show as they are (the
// user's secret salt among them).

#include <cstdint>
#include <cstdio>
#include <initializer_list>
#include <string>

namespace abx::core {

inline constexpr uint64_t kFnvOffset = 14695981039346656037ULL;

inline uint64_t Fnv1a(uint64_t hash, const std::string& text) {
  for (unsigned char c : text) {
    hash ^= c;
    hash *= 1099511628211ULL;
  }
  hash ^= 0xff;
  return hash * 1099511628211ULL;
}

// `prefix` and the hash of `parts` as 16 hex digits.
inline std::string FnvName(const char* prefix, std::initializer_list<std::string> parts) {
  uint64_t hash = kFnvOffset;
  for (const std::string& part : parts) hash = Fnv1a(hash, part);
  char name[40];
  std::snprintf(name, sizeof name, "%s%016llx", prefix, static_cast<unsigned long long>(hash));
  return name;
}

}  // namespace abx::core
