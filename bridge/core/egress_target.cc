#include "bridge/core/egress_target.h"

#include <arpa/inet.h>

#include <cstdlib>

namespace abx::core {
namespace {

// Letters, digits, '-' and '_' (service names such as _dmarc), 1 … 63 of them, not
// beginning or ending with '-'; at most 253 in all, no empty label.
bool IsHostName(const std::string& name) {
  if (name.empty() || name.size() > 253) return false;
  size_t start = 0;
  while (start <= name.size()) {
    size_t end = name.find('.', start);
    if (end == std::string::npos) end = name.size();
    const size_t length = end - start;
    if (length == 0 || length > 63) return false;
    if (name[start] == '-' || name[end - 1] == '-') return false;
    for (size_t i = start; i < end; ++i) {
      const char c = name[i];  // ASCII whatever the locale: an IDN is given as xn--…
      const bool alnum = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
      if (!alnum && c != '-' && c != '_') return false;
    }
    start = end + 1;
  }
  return true;
}

bool IsAddress(const std::string& text, int* bits) {
  unsigned char buffer[16];
  if (inet_pton(AF_INET, text.c_str(), buffer) == 1) {
    *bits = 32;
    return true;
  }
  if (inet_pton(AF_INET6, text.c_str(), buffer) == 1) {
    *bits = 128;
    return true;
  }
  return false;
}

bool IsCidr(const std::string& text) {
  const size_t slash = text.find('/');
  if (slash == std::string::npos) return false;
  int bits = 0;
  if (!IsAddress(text.substr(0, slash), &bits)) return false;
  const std::string prefix = text.substr(slash + 1);
  // As Go's netip.ParsePrefix reads it (the sidecar's): digits, no leading zero.
  if (prefix.empty() || prefix.size() > 3 || prefix.find_first_not_of("0123456789") != std::string::npos ||
      (prefix.size() > 1 && prefix[0] == '0')) {
    return false;
  }
  return std::atoi(prefix.c_str()) <= bits;
}

}  // namespace

std::optional<std::string> EgressTargetProblem(const std::string& target) {
  int bits = 0;
  if (IsAddress(target, &bits) || IsCidr(target)) return std::nullopt;
  if (target.rfind("*.", 0) == 0) {
    if (IsHostName(target.substr(2))) return std::nullopt;
    return "is not a wildcard of a domain's subdomains (*.example.com)";
  }
  if (target.find('*') != std::string::npos) return "has a * that is not its first label (*.example.com)";
  if (IsHostName(target)) return std::nullopt;
  return "is not a host name, *.domain, IP address or CIDR";
}

}  // namespace abx::core
