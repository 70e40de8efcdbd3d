#include "bridge/core/shell_words.h"

namespace abx::core {
namespace {

bool Blank(char c) { return c == ' ' || c == '\t' || c == '\n'; }

}  // namespace

std::optional<std::vector<std::string>> SplitShellWords(const std::string& line) {
  std::vector<std::string> words;
  std::string word;
  bool in_word = false;  // a word has begun, even an empty quoted one
  for (size_t i = 0; i < line.size(); ++i) {
    const char c = line[i];
    if (Blank(c)) {
      if (in_word) words.push_back(std::move(word));
      word.clear();
      in_word = false;
    } else if (c == '\\') {
      if (i + 1 == line.size()) return std::nullopt;
      ++i;
      if (line[i] == '\n') continue;  // a joined line
      word += line[i];
      in_word = true;
    } else if (c == '\'') {
      const size_t close = line.find('\'', i + 1);
      if (close == std::string::npos) return std::nullopt;
      word.append(line, i + 1, close - i - 1);
      i = close;
      in_word = true;
    } else if (c == '"') {
      size_t j = i + 1;
      for (; j < line.size() && line[j] != '"'; ++j) {
        if (line[j] == '\\' && j + 1 < line.size()) {
          const char next = line[j + 1];
          if (next == '"' || next == '\\' || next == '$' || next == '`') {
            word += next;
            ++j;
            continue;
          }
          if (next == '\n') {
            ++j;
            continue;
          }
        }
        word += line[j];
      }
      if (j == line.size()) return std::nullopt;
      i = j;
      in_word = true;
    } else {
      word += c;
      in_word = true;
    }
  }
  if (in_word) words.push_back(std::move(word));
  return words;
}

}  // namespace abx::core
