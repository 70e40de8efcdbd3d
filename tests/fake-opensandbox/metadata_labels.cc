#include "tests/fake-opensandbox/metadata_labels.h"

#include <cctype>

namespace fake_opensandbox {
namespace {

bool IsAlnum(char c) { return isalnum(static_cast<unsigned char>(c)) != 0; }

bool MatchesName(const std::string& s) {
  if (s.empty() || s.size() > 63) return false;
  if (!IsAlnum(s.front()) || !IsAlnum(s.back())) return false;
  for (char c : s) {
    if (!IsAlnum(c) && c != '-' && c != '_' && c != '.') return false;
  }
  return true;
}

bool IsDnsSubdomain(const std::string& s) {
  if (s.empty() || s.size() > 253) return false;
  size_t start = 0;
  while (start <= s.size()) {
    size_t dot = s.find('.', start);
    if (dot == std::string::npos) dot = s.size();
    std::string label = s.substr(start, dot - start);
    if (label.empty() || label.size() > 63) return false;
    for (char c : label) {
      if (!(islower(static_cast<unsigned char>(c)) || isdigit(static_cast<unsigned char>(c)) ||
            c == '-')) {
        return false;
      }
    }
    if (label.front() == '-' || label.back() == '-') return false;
    start = dot + 1;
  }
  return true;
}

}  // namespace

bool IsReservedLabelKey(const std::string& key) {
  return key.rfind(kReservedLabelPrefix, 0) == 0;
}

std::string CheckLabelKey(const std::string& key) {
  if (IsReservedLabelKey(key)) {
    return "the prefix '" + std::string(kReservedLabelPrefix) + "' is reserved";
  }
  std::string name = key;
  size_t slash = key.find('/');
  if (slash != std::string::npos) {
    std::string prefix = key.substr(0, slash);
    name = key.substr(slash + 1);
    if (!IsDnsSubdomain(prefix)) return "prefix must be a DNS subdomain of at most 253 characters";
  }
  if (!MatchesName(name)) {
    return "name must be 63 characters or less, begin and end with an alphanumeric character "
           "and contain only alphanumerics, '-', '_' or '.'";
  }
  return "";
}

std::string CheckLabelValue(const std::string& value) {
  if (value.empty() || MatchesName(value)) return "";
  return "value must be empty or 63 characters or less, begin and end with an alphanumeric "
         "character and contain only alphanumerics, '-', '_' or '.'";
}

}  // namespace fake_opensandbox
