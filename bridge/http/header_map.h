#pragma once
// HTTP header fields as received: names keep their spelling and order, lookups ignore case
// (header names are case-insensitive on the wire, and servers differ in how they write them).

#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace abx::http {

// Request headers, sent in this order. Values may be secrets (API key, execd token): the
// transport never logs them or puts them in an error.
using HeaderList = std::vector<std::pair<std::string, std::string>>;

// True when `a` and `b` are equal ignoring ASCII case.
bool EqualsIgnoreCase(std::string_view a, std::string_view b);

class HeaderMap {
 public:
  using Entry = std::pair<std::string, std::string>;

  void Add(std::string name, std::string value);
  // Appends " " + `more` to the last value (obsolete line folding); no-op when empty.
  void ExtendLastValue(std::string_view more);
  void Clear() { entries_.clear(); }

  // The first value of `name`, or nullptr when absent.
  const std::string* Find(std::string_view name) const;
  // The first value of `name`, or "" when absent.
  std::string Get(std::string_view name) const;
  // Every value of `name`, in the order received.
  std::vector<std::string> GetAll(std::string_view name) const;
  bool Has(std::string_view name) const { return Find(name) != nullptr; }

  const std::vector<Entry>& entries() const { return entries_; }
  size_t size() const { return entries_.size(); }
  bool empty() const { return entries_.empty(); }

 private:
  std::vector<Entry> entries_;
};

}  // namespace abx::http
