// The built fake-opensandbox binary: its first stdout line, --help, and cleanup on
// SIGTERM (sandbox processes killed, temp root removed).

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <string>
#include <thread>

#include "tests/fake-opensandbox/test_support.h"

namespace fake_opensandbox {
namespace {

std::string BinaryPath() {
  const char* srcdir = getenv("TEST_SRCDIR");
  const char* workspace = getenv("TEST_WORKSPACE");
  if (srcdir && workspace) {
    return std::string(srcdir) + "/" + workspace + "/tests/fake-opensandbox/fake-opensandbox";
  }
  return "tests/fake-opensandbox/fake-opensandbox";
}

struct Child {
  pid_t pid = -1;
  FILE* out = nullptr;
};

Child Spawn(std::vector<std::string> args) {
  int fds[2];
  EXPECT_EQ(pipe(fds), 0);
  Child child;
  child.pid = fork();
  if (child.pid == 0) {
    dup2(fds[1], 1);
    close(fds[0]);
    close(fds[1]);
    std::vector<char*> argv;
    std::string path = BinaryPath();
    argv.push_back(const_cast<char*>(path.c_str()));
    for (auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    execv(path.c_str(), argv.data());
    _exit(127);
  }
  close(fds[1]);
  child.out = fdopen(fds[0], "r");
  return child;
}

std::string ReadLine(FILE* f) {
  char buf[4096];
  if (!fgets(buf, sizeof(buf), f)) return "";
  return buf;
}

TEST(BinaryTest, HelpSaysThereIsNoIsolation) {
  Child child = Spawn({"--help"});
  std::string text;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof(buf), child.out)) > 0) text.append(buf, n);
  int status;
  waitpid(child.pid, &status, 0);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  EXPECT_NE(text.find("test double and dev server"), std::string::npos);
  EXPECT_NE(text.find("NO isolation"), std::string::npos);
  EXPECT_NE(text.find("--execd-ready-after"), std::string::npos);
}

TEST(BinaryTest, BadFlagFails) {
  Child child = Spawn({"--no-such-flag"});
  int status;
  waitpid(child.pid, &status, 0);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 2);
}

TEST(BinaryTest, ListensPrintsPortAndCleansUpOnSigterm) {
  Child child = Spawn({"--port", "0", "--api-key", "k", "--execd-ready-after", "0"});
  std::string line = ReadLine(child.out);
  ASSERT_EQ(line.rfind("listening on 127.0.0.1:", 0), 0u) << line;
  int port = atoi(line.substr(strlen("listening on 127.0.0.1:")).c_str());
  ASSERT_GT(port, 0);
  httplib::Client client("127.0.0.1", port);
  EXPECT_EQ(client.Get("/v1/sandboxes")->status, 401);
  httplib::Headers key = {{"OPEN-SANDBOX-API-KEY", "k"}};
  auto created = client.Post("/v1/sandboxes", key,
                             R"({"image":{"uri":"x"},"entrypoint":["a"],"resourceLimits":{}})",
                             "application/json");
  ASSERT_EQ(created->status, 202);
  std::string id = ParseJson(created->body)["id"].GetString();
  auto info = ParseJson(client.Get(("/_fake/sandboxes/" + id).c_str())->body);
  std::string root = info["root"].GetString();
  std::string temp_root = root.substr(0, root.rfind('/'));
  EndpointClient execd(ParseJson(client.Get(("/v1/sandboxes/" + id + "/endpoints/44772").c_str(), key)->body)["endpoint"].GetString());
  auto bg = execd.client->Post(execd.Path("/command").c_str(),
                               R"({"command":"sleep 617.3","background":true})", "application/json");
  ASSERT_EQ(bg->status, 200);
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  EXPECT_TRUE(ProcessRunning("sleep 617.3"));
  struct stat st;
  ASSERT_EQ(stat(temp_root.c_str(), &st), 0);

  kill(child.pid, SIGTERM);
  int status;
  waitpid(child.pid, &status, 0);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  EXPECT_NE(stat(temp_root.c_str(), &st), 0) << temp_root << " still exists";
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  EXPECT_FALSE(ProcessRunning("sleep 617.3"));
}

}  // namespace
}  // namespace fake_opensandbox
