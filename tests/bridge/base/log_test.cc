// The bridge's log from many threads at once, as request threads, the HTTP client and the
// session adapter write it while new sessions register their secrets: every line whole
// and in each thread's order, and no secret registered before a line was written ever
// in it, raw or JSON-escaped. No gRPC, so ThreadSanitizer judges it (tools/sanitizers).

#include "bridge/base/log.h"

#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>
#include <rapidjson/document.h>

namespace abx::log {
namespace {

// Points stderr (where the log goes) at a file while alive. The file is kept among the
// test's outputs, so a sanitizer report written while stderr was taken is not lost.
class CapturedStderr {
 public:
  CapturedStderr() {
    const char* dir = std::getenv("TEST_UNDECLARED_OUTPUTS_DIR");
    if (!dir || !*dir) dir = std::getenv("TEST_TMPDIR");
    path_ = std::string(dir && *dir ? dir : "/tmp") + "/log_test_stderr.txt";
    std::printf("stderr goes to %s while the log is captured\n", path_.c_str());
    std::fflush(stdout);
    std::fflush(stderr);
    saved_ = ::dup(2);
    const int fd = ::open(path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    ::dup2(fd, 2);
    ::close(fd);
  }
  // Gives stderr back; returns what was written meanwhile.
  std::string Release() {
    std::fflush(stderr);
    ::dup2(saved_, 2);
    ::close(saved_);
    std::ifstream in(path_);
    std::stringstream text;
    text << in.rdbuf();
    return text.str();
  }

 private:
  std::string path_;
  int saved_ = -1;
};

std::vector<std::string> Lines(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

// A secret with a quote and a backslash, so its JSON-escaped form differs from it.
// A key configured with blanks around it is used trimmed: that form is masked too.
TEST(LogTest, ASecretIsMaskedAlsoWithoutTheBlanksAroundIt) {
  RegisterSecret("  key-with-blanks-4242\n");
  const std::string scrubbed = Scrub("refused key key-with-blanks-4242 here");
  EXPECT_EQ(scrubbed.find("key-with-blanks-4242"), std::string::npos) << scrubbed;
}

std::string Secret(int k) { return "s3cr\"et\\" + std::to_string(1000 + k) + "-tok"; }
std::string Escaped(int k) { return "s3cr\\\"et\\\\" + std::to_string(1000 + k) + "-tok"; }

TEST(LogTest, ManyThreadsLogWholeLinesWhileSecretsAreRegistered) {
  constexpr int kWriters = 8, kLinesEach = 400, kSecrets = 60;
  std::atomic<int> registered{0};  // secrets 0..registered-1 are registered
  CapturedStderr captured;
  std::vector<std::thread> threads;
  threads.emplace_back([&] {
    for (int k = 0; k < kSecrets; ++k) {
      RegisterSecret(Secret(k));
      registered.store(k + 1, std::memory_order_release);
      std::this_thread::sleep_for(std::chrono::microseconds(200));
    }
  });
  threads.emplace_back([&] {
    // Scrub, for text leaving the bridge another way, runs beside the writers too.
    for (int n = 0; n < 2000; ++n) {
      const int known = registered.load(std::memory_order_acquire);
      if (known == 0) continue;
      EXPECT_EQ(Scrub("x" + Secret(known - 1) + "y"), "x***y");
    }
  });
  for (int t = 0; t < kWriters; ++t) {
    threads.emplace_back([&, t] {
      std::mt19937 rng(t);
      for (int n = 0; n < kLinesEach; ++n) {
        const int known = registered.load(std::memory_order_acquire);
        const std::string secret = known ? Secret(static_cast<int>(rng() % known)) : "";
        const std::string payload = "line " + std::to_string(n) + " \"quoted\" \xc3\xa9\n" +
                                    std::string(rng() % 300, 'p');
        if (n % 3 == 0) {
          Warn("test.line", {{"writer", std::to_string(t)}, {"n", std::to_string(n)},
                             {"payload", payload}, {"secret", secret}});
        } else {
          Info("test.line", {{"writer", std::to_string(t)}, {"n", std::to_string(n)},
                             {"error", "failed with " + secret + " in it"}});
        }
      }
    });
  }
  for (std::thread& t : threads) t.join();
  const std::string text = captured.Release();

  std::map<int, int> next_n;  // per writer
  int ours = 0;
  for (const std::string& line : Lines(text)) {
    rapidjson::Document doc;
    doc.Parse(line.c_str(), line.size());
    ASSERT_FALSE(doc.HasParseError()) << "not one whole JSON line: " << line.substr(0, 300);
    ASSERT_TRUE(doc.IsObject()) << line.substr(0, 300);
    if (!doc.HasMember("event") || std::string(doc["event"].GetString()) != "test.line") continue;
    ++ours;
    const int writer = std::atoi(doc["writer"].GetString());
    const int n = std::atoi(doc["n"].GetString());
    EXPECT_EQ(n, next_n[writer]) << "writer " << writer << "'s lines out of order";
    next_n[writer] = n + 1;
    if (doc.HasMember("secret") && doc["secret"].GetStringLength() > 0) {
      EXPECT_EQ(std::string(doc["secret"].GetString()), "***") << line;
    }
  }
  EXPECT_EQ(ours, kWriters * kLinesEach);
  for (int k = 0; k < kSecrets; ++k) {
    EXPECT_EQ(text.find(Secret(k)), std::string::npos) << "secret " << k << " in the log";
    EXPECT_EQ(text.find(Escaped(k)), std::string::npos) << "escaped secret " << k << " in the log";
  }
}

}  // namespace
}  // namespace abx::log
