#pragma once
// A failed invariant in a fuzz target: print what broke and abort, so libFuzzer keeps
// the input as a crash artifact. Always on, whatever the build flags.

#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

namespace abx::fuzz {

// `text` with bytes outside printable ASCII as \xNN, cut at `max` bytes: safe to print.
inline std::string Printable(std::string_view text, size_t max = 300) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  for (size_t i = 0; i < text.size() && i < max; ++i) {
    const unsigned char c = static_cast<unsigned char>(text[i]);
    if (c >= 0x20 && c < 0x7f && c != '\\') {
      out += static_cast<char>(c);
    } else {
      out += "\\x";
      out += kHex[c >> 4];
      out += kHex[c & 15];
    }
  }
  if (text.size() > max) out += "...(" + std::to_string(text.size()) + " bytes)";
  return out;
}

}  // namespace abx::fuzz

#define FUZZ_CHECK(condition, ...)                                                   \
  do {                                                                               \
    if (!(condition)) {                                                              \
      std::fprintf(stderr, "%s:%d: invariant failed: %s\n  ", __FILE__, __LINE__,     \
                   #condition);                                                      \
      std::fprintf(stderr, __VA_ARGS__);                                             \
      std::fprintf(stderr, "\n");                                                    \
      std::abort();                                                                  \
    }                                                                                \
  } while (0)
