#include "bridge/core/shell_quote.h"

#include <cstdio>
#include <string>
#include <vector>

#include <gtest/gtest.h>

namespace abx::core {
namespace {

// Runs the quoted words through a real bash and reads each word back, NUL-separated.
std::vector<std::string> RoundTrip(const std::vector<std::string>& argv) {
  const std::string script = "printf '%s\\0' " + ShellJoin(argv);
  // The script is passed through a file, so the test itself needs no quoting.
  char path[] = "/tmp/shell_quote_testXXXXXX";
  int fd = mkstemp(path);
  EXPECT_GE(fd, 0);
  FILE* f = fdopen(fd, "w");
  std::fwrite(script.data(), 1, script.size(), f);
  std::fclose(f);
  FILE* p = popen((std::string("bash ") + path).c_str(), "r");
  std::string out;
  char buf[4096];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, n);
  pclose(p);
  unlink(path);
  std::vector<std::string> words;
  size_t start = 0;
  for (size_t i = 0; i < out.size(); ++i) {
    if (out[i] == '\0') {
      words.push_back(out.substr(start, i - start));
      start = i + 1;
    }
  }
  return words;
}

TEST(ShellQuoteTest, PlainWord) { EXPECT_EQ(ShellQuote("abc"), "'abc'"); }

TEST(ShellQuoteTest, SingleQuoteIsClosedEscapedAndReopened) {
  EXPECT_EQ(ShellQuote("it's"), "'it'\\''s'");
}

TEST(ShellQuoteTest, HostileWordsReachTheProgramUnchanged) {
  const std::vector<std::string> hostile = {
      "",  "a b", "$HOME", "${PATH}", "`id`", "$(id)", "\\", "\\n", "\"", "'", "''", "it's",
      "line1\nline2", "tab\there", "*", "?", "[a]", "~", "!", ";", "&&", "|", ">", "<", "#",
      "%s", "-n", "--", "héllo wörld", "日本語", "emoji 😀", "\r\n", "a'b\"c$d`e\\f",
  };
  EXPECT_EQ(RoundTrip(hostile), hostile);
}

}  // namespace
}  // namespace abx::core
