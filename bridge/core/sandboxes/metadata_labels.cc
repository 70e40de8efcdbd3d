#include "bridge/core/sandboxes/metadata_labels.h"

namespace abx::core {
namespace {

bool Alnum(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9'); }

bool IsLabelName(const std::string& s) {
  if (s.empty() || s.size() > 63 || !Alnum(s.front()) || !Alnum(s.back())) return false;
  for (char c : s) {
    if (!Alnum(c) && c != '-' && c != '_' && c != '.') return false;
  }
  return true;
}

// Lower-case DNS labels of 1–63 characters joined by dots, 253 at most.
bool IsDnsSubdomain(const std::string& s) {
  if (s.empty() || s.size() > 253) return false;
  size_t start = 0;
  for (;;) {
    const size_t dot = s.find('.', start);
    const std::string label = s.substr(start, dot == std::string::npos ? std::string::npos : dot - start);
    if (label.empty() || label.size() > 63 || label.front() == '-' || label.back() == '-') return false;
    for (char c : label) {
      if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-')) return false;
    }
    if (dot == std::string::npos) return true;
    start = dot + 1;
  }
}

constexpr const char* kNameRule =
    "63 characters at most, alphanumerics, '-', '_' or '.', starting and ending with an alphanumeric";

}  // namespace

std::string LabelKeyProblem(const std::string& key) {
  if (key.rfind(kReservedLabelPrefix, 0) == 0) {
    return "the prefix " + std::string(kReservedLabelPrefix) + " is the server's own";
  }
  std::string name = key;
  const size_t slash = key.find('/');
  if (slash != std::string::npos) {
    if (!IsDnsSubdomain(key.substr(0, slash))) return "the part before '/' must be a lower-case DNS name";
    name = key.substr(slash + 1);
  }
  if (!IsLabelName(name)) return std::string("a key's name must be ") + kNameRule;
  return "";
}

std::string LabelValueProblem(const std::string& value) {
  if (value.empty() || IsLabelName(value)) return "";
  return std::string("a value must be empty or ") + kNameRule;
}

}  // namespace abx::core
