#include "tests/fake-opensandbox/signed_route.h"

#include <openssl/sha.h>

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <vector>

namespace fake_opensandbox {
namespace {

void AppendLength(std::string* out, size_t length) {
  for (int shift = 24; shift >= 0; shift -= 8) out->push_back(static_cast<char>((length >> shift) & 0xff));
}

bool IsDecimalPort(const std::string& text, int* port) {
  if (text.empty() || text.size() > 5 || text[0] == '0') return false;
  if (text.find_first_not_of("0123456789") != std::string::npos) return false;
  *port = std::stoi(text);
  return *port >= 1 && *port <= 65535;
}

bool IsSignature(const std::string& text) {
  if (text.size() != 9) return false;
  for (size_t i = 0; i < 8; ++i) {
    if (!std::isxdigit(static_cast<unsigned char>(text[i])) || std::isupper(static_cast<unsigned char>(text[i]))) {
      return false;
    }
  }
  const char id = text[8];
  return (id >= '0' && id <= '9') || (id >= 'a' && id <= 'z');
}

}  // namespace

std::string Base36(uint64_t value) {
  static const char kDigits[] = "0123456789abcdefghijklmnopqrstuvwxyz";
  if (value == 0) return "0";
  std::string out;
  while (value > 0) {
    out.push_back(kDigits[value % 36]);
    value /= 36;
  }
  std::reverse(out.begin(), out.end());
  return out;
}

std::optional<uint64_t> ParseBase36(const std::string& text) {
  if (text.empty() || text.size() > 13 || (text.size() > 1 && text[0] == '0')) return std::nullopt;
  unsigned __int128 value = 0;
  for (char c : text) {
    int digit;
    if (c >= '0' && c <= '9') {
      digit = c - '0';
    } else if (c >= 'a' && c <= 'z') {
      digit = c - 'a' + 10;
    } else {
      return std::nullopt;
    }
    value = value * 36 + digit;
    if (value > UINT64_MAX) return std::nullopt;
  }
  return static_cast<uint64_t>(value);
}

std::string RouteSignature(const std::string& secret, char key_id, const std::string& sandbox_id, int port,
                           uint64_t expires) {
  const std::string canonical =
      "v1\nshort\n" + sandbox_id + "\n" + std::to_string(port) + "\n" + Base36(expires) + "\n";
  std::string inner;
  AppendLength(&inner, secret.size());
  inner += secret;
  AppendLength(&inner, canonical.size());
  inner += canonical;
  unsigned char digest[SHA256_DIGEST_LENGTH];
  SHA256(reinterpret_cast<const unsigned char*>(inner.data()), inner.size(), digest);
  char hex[9];
  std::snprintf(hex, sizeof hex, "%02x%02x%02x%02x", digest[0], digest[1], digest[2], digest[3]);
  return std::string(hex) + key_id;
}

std::string SignedRouteToken(const std::string& secret, char key_id, const std::string& sandbox_id, int port,
                             uint64_t expires) {
  return sandbox_id + "-" + std::to_string(port) + "-" + Base36(expires) + "-" +
         RouteSignature(secret, key_id, sandbox_id, port, expires);
}

std::optional<RouteToken> ParseRouteToken(const std::string& token) {
  std::vector<std::string> parts;
  size_t start = 0;
  for (size_t dash; (dash = token.find('-', start)) != std::string::npos; start = dash + 1) {
    parts.push_back(token.substr(start, dash - start));
  }
  parts.push_back(token.substr(start));
  auto join = [&](size_t count) {
    std::string id;
    for (size_t i = 0; i < count; ++i) id += (i ? "-" : "") + parts[i];
    return id;
  };
  RouteToken out;
  if (parts.size() >= 4 && IsSignature(parts.back()) && IsDecimalPort(parts[parts.size() - 3], &out.port)) {
    if (auto expires = ParseBase36(parts[parts.size() - 2])) {
      out.sandbox_id = join(parts.size() - 3);
      out.signed_route = true;
      out.expires = *expires;
      out.expires_b36 = parts[parts.size() - 2];
      out.signature = parts.back();
      if (!out.sandbox_id.empty()) return out;
    }
  }
  // The plain form, as upstream falls back to it: the last part is the port.
  out = RouteToken();
  if (parts.size() < 2 || !IsDecimalPort(parts.back(), &out.port)) return std::nullopt;
  out.sandbox_id = join(parts.size() - 1);
  if (out.sandbox_id.empty()) return std::nullopt;
  return out;
}

std::optional<int> ParsePortSegment(const std::string& text) {
  int port = 0;
  if (!IsDecimalPort(text, &port)) return std::nullopt;
  return port;
}

std::optional<std::string> DecodeBase64(const std::string& text) {
  static const std::string kAlphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  if (text.empty() || text.size() % 4 != 0) return std::nullopt;
  std::string out;
  for (size_t i = 0; i < text.size(); i += 4) {
    uint32_t chunk = 0;
    int pad = 0;
    for (size_t j = 0; j < 4; ++j) {
      const char c = text[i + j];
      size_t v = 0;
      if (c == '=' && i + 4 == text.size() && j >= 2) {
        ++pad;
      } else if (pad > 0 || (v = kAlphabet.find(c)) == std::string::npos) {
        return std::nullopt;
      }
      chunk = (chunk << 6) | static_cast<uint32_t>(v);
    }
    out.push_back(static_cast<char>((chunk >> 16) & 0xff));
    if (pad < 2) out.push_back(static_cast<char>((chunk >> 8) & 0xff));
    if (pad < 1) out.push_back(static_cast<char>(chunk & 0xff));
  }
  return out;
}

std::string TrimSpaces(const std::string& text) {
  const size_t begin = text.find_first_not_of(" \t\r\n\v\f");
  if (begin == std::string::npos) return "";
  return text.substr(begin, text.find_last_not_of(" \t\r\n\v\f") - begin + 1);
}

bool ParseSigningKeys(const std::string& text, std::vector<SigningKey>* keys, std::string* error) {
  keys->clear();
  if (TrimSpaces(text).empty()) {
    *error = "--secure-access-keys: empty keys string";
    return false;
  }
  size_t start = 0;
  while (start <= text.size()) {
    size_t comma = text.find(',', start);
    if (comma == std::string::npos) comma = text.size();
    const std::string segment = TrimSpaces(text.substr(start, comma - start));
    start = comma + 1;
    if (segment.empty()) continue;
    const size_t eq = segment.find('=');
    if (eq == std::string::npos || eq == 0 || eq + 1 == segment.size()) {
      *error = "--secure-access-keys: invalid keys segment \"" + segment + "\" (want key_id=base64)";
      return false;
    }
    const std::string id = TrimSpaces(segment.substr(0, eq));
    const char c = id.empty() ? 0 : id[0];
    if (id.size() != 1 || !((c >= '0' && c <= '9') || (c >= 'a' && c <= 'z'))) {
      *error = "--secure-access-keys: key_id must be exactly one of [0-9a-z], got \"" + id + "\"";
      return false;
    }
    auto secret = DecodeBase64(TrimSpaces(segment.substr(eq + 1)));
    if (!secret || secret->empty()) {
      *error = std::string("--secure-access-keys: ") + (secret ? "empty secret" : "cannot decode the secret") +
               " for key \"" + id + "\" (padded standard base64)";
      return false;
    }
    bool replaced = false;
    for (SigningKey& key : *keys) {
      if (key.id == c) key.secret = *secret, replaced = true;
    }
    if (!replaced) keys->push_back(SigningKey{c, *secret});
  }
  if (keys->empty()) {
    *error = "--secure-access-keys: no keys parsed";
    return false;
  }
  return true;
}

}  // namespace fake_opensandbox
