#include "bridge/core/base64.h"

#include <array>
#include <cstdint>

namespace abx::core {
namespace {

constexpr char kAlphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

int Value(unsigned char c) {
  if (c >= 'A' && c <= 'Z') return c - 'A';
  if (c >= 'a' && c <= 'z') return c - 'a' + 26;
  if (c >= '0' && c <= '9') return c - '0' + 52;
  if (c == '+') return 62;
  if (c == '/') return 63;
  return -1;
}

}  // namespace

std::string Base64Encode(std::string_view in) {
  std::string out;
  out.resize((in.size() + 2) / 3 * 4);
  size_t o = 0, i = 0;
  const auto* p = reinterpret_cast<const unsigned char*>(in.data());
  for (; i + 3 <= in.size(); i += 3) {
    const uint32_t v = (p[i] << 16) | (p[i + 1] << 8) | p[i + 2];
    out[o++] = kAlphabet[v >> 18];
    out[o++] = kAlphabet[(v >> 12) & 63];
    out[o++] = kAlphabet[(v >> 6) & 63];
    out[o++] = kAlphabet[v & 63];
  }
  if (i < in.size()) {
    uint32_t v = p[i] << 16;
    if (i + 1 < in.size()) v |= p[i + 1] << 8;
    out[o++] = kAlphabet[v >> 18];
    out[o++] = kAlphabet[(v >> 12) & 63];
    out[o++] = i + 1 < in.size() ? kAlphabet[(v >> 6) & 63] : '=';
    out[o++] = '=';
  }
  return out;
}

std::optional<std::string> Base64Decode(std::string_view in) {
  // Whole groups of four alphabet characters go through a table into a pre-sized buffer
  // (files.write moves megabytes through here); at the first byte that is not one
  // (padding, whitespace, garbage) the bytewise loop below takes over at that group.
  static const auto kValues = [] {
    std::array<int8_t, 256> values{};
    values.fill(-1);
    for (int i = 0; i < 64; ++i) values[static_cast<unsigned char>(kAlphabet[i])] = static_cast<int8_t>(i);
    return values;
  }();
  std::string out;
  out.resize(in.size() / 4 * 3);
  char* o = out.data();
  const auto* p = reinterpret_cast<const unsigned char*>(in.data());
  size_t i = 0;
  for (; i + 4 <= in.size(); i += 4) {
    const int a = kValues[p[i]], b = kValues[p[i + 1]], c = kValues[p[i + 2]], d = kValues[p[i + 3]];
    if ((a | b | c | d) < 0) break;
    const uint32_t v = (uint32_t(a) << 18) | (uint32_t(b) << 12) | (uint32_t(c) << 6) | uint32_t(d);
    o[0] = static_cast<char>(v >> 16);
    o[1] = static_cast<char>(v >> 8);
    o[2] = static_cast<char>(v);
    o += 3;
  }
  out.resize(static_cast<size_t>(o - out.data()));
  uint32_t acc = 0;
  int bits = 0, pad = 0;
  size_t count = i;
  for (unsigned char c : in.substr(i)) {
    if (c == ' ' || c == '\n' || c == '\r' || c == '\t') continue;
    ++count;
    if (c == '=') {
      ++pad;
      continue;
    }
    if (pad) return std::nullopt;  // data after padding
    const int v = Value(c);
    if (v < 0) return std::nullopt;
    acc = (acc << 6) | static_cast<uint32_t>(v);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out += static_cast<char>((acc >> bits) & 0xFF);
    }
  }
  if (count % 4 != 0 || pad > 2) return std::nullopt;
  return out;
}

}  // namespace abx::core
