#include "tests/fake-opensandbox/ids.h"

#include <cstdint>
#include <mutex>
#include <random>

namespace fake_opensandbox {
namespace {

void RandomBytes(uint8_t out[16]) {
  static std::mutex mutex;
  static std::mt19937_64 engine{std::random_device{}()};
  std::lock_guard<std::mutex> lock(mutex);
  uint64_t a = engine(), b = engine();
  for (int i = 0; i < 8; ++i) {
    out[i] = static_cast<uint8_t>(a >> (i * 8));
    out[8 + i] = static_cast<uint8_t>(b >> (i * 8));
  }
  out[6] = (out[6] & 0x0f) | 0x40;  // version 4
  out[8] = (out[8] & 0x3f) | 0x80;  // RFC 4122 variant
}

std::string Hex(const uint8_t bytes[16], bool dashes) {
  static const char kDigits[] = "0123456789abcdef";
  std::string out;
  for (int i = 0; i < 16; ++i) {
    if (dashes && (i == 4 || i == 6 || i == 8 || i == 10)) out += '-';
    out += kDigits[bytes[i] >> 4];
    out += kDigits[bytes[i] & 0xf];
  }
  return out;
}

}  // namespace

std::string NewUuid4() {
  uint8_t bytes[16];
  RandomBytes(bytes);
  return Hex(bytes, true);
}

std::string NewUuid4Hex() {
  uint8_t bytes[16];
  RandomBytes(bytes);
  return Hex(bytes, false);
}

}  // namespace fake_opensandbox
