#include "bridge/http/header_map.h"

namespace abx::http {
namespace {

char LowerAscii(char c) { return (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : c; }

}  // namespace

bool EqualsIgnoreCase(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (LowerAscii(a[i]) != LowerAscii(b[i])) return false;
  }
  return true;
}

void HeaderMap::Add(std::string name, std::string value) {
  entries_.emplace_back(std::move(name), std::move(value));
}

void HeaderMap::ExtendLastValue(std::string_view more) {
  if (entries_.empty()) return;
  entries_.back().second += ' ';
  entries_.back().second.append(more);
}

const std::string* HeaderMap::Find(std::string_view name) const {
  for (const Entry& entry : entries_) {
    if (EqualsIgnoreCase(entry.first, name)) return &entry.second;
  }
  return nullptr;
}

std::string HeaderMap::Get(std::string_view name) const {
  const std::string* value = Find(name);
  return value ? *value : std::string();
}

std::vector<std::string> HeaderMap::GetAll(std::string_view name) const {
  std::vector<std::string> values;
  for (const Entry& entry : entries_) {
    if (EqualsIgnoreCase(entry.first, name)) values.push_back(entry.second);
  }
  return values;
}

}  // namespace abx::http
