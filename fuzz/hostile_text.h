#pragma once
// Turns a short fuzzer input into the long hostile texts a server or a host can send
// (100k '[' deep, a megabyte of one byte), so small seeds and libFuzzer's default input
// size still reach the paths that only sizes reach: parser stack depth, line limits.
//
// The marker byte 0x01 followed by a count byte N and a byte C stands for C written
// (N + 1) * 1024 times. A 0x01 without two bytes after it is kept as it is. The output
// is capped at kMaxExpandedBytes, so one input cannot ask for more than that.

#include <cstddef>
#include <string>
#include <string_view>

namespace abx::fuzz {

inline constexpr size_t kMaxExpandedBytes = 1 << 20;
inline constexpr char kRepeatMarker = '\x01';

inline std::string ExpandRepeats(std::string_view in) {
  std::string out;
  out.reserve(in.size());
  for (size_t i = 0; i < in.size(); ++i) {
    if (in[i] == kRepeatMarker && i + 2 < in.size()) {
      const size_t count = (static_cast<unsigned char>(in[i + 1]) + 1) * size_t{1024};
      const size_t room = kMaxExpandedBytes > out.size() ? kMaxExpandedBytes - out.size() : 0;
      out.append(count < room ? count : room, in[i + 2]);
      i += 2;
    } else if (out.size() < kMaxExpandedBytes) {
      out += in[i];
    }
  }
  return out;
}

}  // namespace abx::fuzz
