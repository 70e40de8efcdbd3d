#include "bridge/core/shell_quote.h"

namespace abx::core {

std::string ShellQuote(const std::string& word) {
  std::string out;
  out.reserve(word.size() + 2);
  out += '\'';
  for (char c : word) {
    if (c == '\'') {
      out += "'\\''";
    } else {
      out += c;
    }
  }
  out += '\'';
  return out;
}

std::string ShellJoin(const std::vector<std::string>& argv) {
  std::string out;
  for (const std::string& word : argv) {
    if (!out.empty()) out += ' ';
    out += ShellQuote(word);
  }
  return out;
}

}  // namespace abx::core
