#include "bridge/core/random_hex.h"

#include <random>

namespace abx::core {

std::string RandomHex(size_t n) {
  static thread_local std::mt19937_64 rng(std::random_device{}());
  static const char* kHex = "0123456789abcdef";
  std::string out;
  out.reserve(n);
  for (size_t i = 0; i < n; ++i) out += kHex[rng() & 15];
  return out;
}

}  // namespace abx::core
