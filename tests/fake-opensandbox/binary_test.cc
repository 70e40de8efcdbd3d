// The built fake-opensandbox binary: its first stdout line, --help, cleanup on SIGTERM
// (sandbox processes killed, temp root removed), and room for many connections at once.

#include <arpa/inet.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <string>
#include <thread>

#include "tests/fake-opensandbox/test_support.h"

namespace fake_opensandbox {
namespace {

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
    std::string path = FakeBinaryPath();
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
                             R"({"image":{"uri":"x"},"entrypoint":["sleep","infinity"],"resourceLimits":{}})",
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

// Starts `count` connections to 127.0.0.1:`port` at once and returns how many the kernel
// completed within `wait_ms`, while nothing accepts them.
int ConnectionsCompleted(int port, int count, int wait_ms) {
  std::vector<int> fds;
  sockaddr_in address = {};
  address.sin_family = AF_INET;
  address.sin_port = htons(static_cast<uint16_t>(port));
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  for (int i = 0; i < count; ++i) {
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) break;
    connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof address);  // EINPROGRESS
    fds.push_back(fd);
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(wait_ms));
  int completed = 0;
  for (int fd : fds) {
    pollfd entry = {fd, POLLOUT, 0};
    int error = 0;
    socklen_t length = sizeof error;
    if (poll(&entry, 1, 0) == 1 && (entry.revents & POLLOUT) != 0 &&
        getsockopt(fd, SOL_SOCKET, SO_ERROR, &error, &length) == 0 && error == 0) {
      ++completed;
    }
    close(fd);
  }
  return completed;
}

// 64 clients that connect at once (the bridge opening an execd connection for each of 64
// sessions) must all be queued for accept. With httplib's built-in backlog of 5 the
// kernel dropped the rest, and each of those clients waited 1-3 s for a retransmission.
// The fake is stopped (SIGSTOP) meanwhile, so the backlog alone decides.
TEST(BinaryTest, ManyConnectionsAtOnceAreQueuedNotDropped) {
  Child child = Spawn({"--port", "0", "--api-key", "k", "--execd-ready-after", "0"});
  std::string line = ReadLine(child.out);
  ASSERT_EQ(line.rfind("listening on 127.0.0.1:", 0), 0u) << line;
  int port = atoi(line.substr(strlen("listening on 127.0.0.1:")).c_str());
  httplib::Client client("127.0.0.1", port);
  httplib::Headers key = {{"OPEN-SANDBOX-API-KEY", "k"}};
  auto created = client.Post("/v1/sandboxes", key,
                             R"({"image":{"uri":"x"},"entrypoint":["sleep","infinity"],"resourceLimits":{}})",
                             "application/json");
  ASSERT_EQ(created->status, 202);
  std::string id = ParseJson(created->body)["id"].GetString();
  auto endpoint = client.Get(("/v1/sandboxes/" + id + "/endpoints/44772").c_str(), key);
  EndpointClient execd_endpoint(ParseJson(endpoint->body)["endpoint"].GetString());
  const int execd_port = execd_endpoint.port;
  ASSERT_GT(execd_port, 0);

  ASSERT_EQ(kill(child.pid, SIGSTOP), 0);
  const int lifecycle = ConnectionsCompleted(port, 64, 300);
  const int execd = ConnectionsCompleted(execd_port, 64, 300);
  kill(child.pid, SIGCONT);
  EXPECT_EQ(lifecycle, 64);
  EXPECT_EQ(execd, 64);

  kill(child.pid, SIGTERM);
  int status;
  waitpid(child.pid, &status, 0);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

}  // namespace
}  // namespace fake_opensandbox
