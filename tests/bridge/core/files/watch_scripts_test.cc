// What files.watch runs in a sandbox and how the bridge reads it (bridge/core/files/watch_scripts.h):
// the watch host's records, joined again when a path held a newline; inotifywait's event
// names as the five types; the poll listing run by real shells (bash and dash) over a real
// tree, one level or all of it, odd names included; and the comparison of two listings.

#include <poll.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "bridge/core/files/watch_scripts.h"

namespace abx::core {
namespace {

TEST(InotifyOutputTest, RecordsMessagesAndRecordsCutByANewline) {
  InotifyOutput output;
  auto items = output.Feed("Watches established.");
  ASSERT_EQ(items.size(), 1u);
  EXPECT_EQ(items[0].watch_id, "");
  EXPECT_EQ(items[0].text, "Watches established.");

  items = output.Feed("w-0a1b\tCREATE,ISDIR\t/tmp/d/new\t/");
  ASSERT_EQ(items.size(), 1u);
  EXPECT_EQ(items[0].watch_id, "w-0a1b");
  ASSERT_TRUE(items[0].event);
  EXPECT_EQ(items[0].event->type, "create");
  EXPECT_EQ(items[0].event->path, "/tmp/d/new");
  EXPECT_TRUE(items[0].event->is_dir);

  // A name holding a newline and a tab arrives as two lines.
  EXPECT_TRUE(output.Feed("w-0a1b\tMODIFY\t/tmp/d/a").empty());
  items = output.Feed("b\tc\t/");
  ASSERT_EQ(items.size(), 1u);
  ASSERT_TRUE(items[0].event);
  EXPECT_EQ(items[0].event->type, "write");
  EXPECT_EQ(items[0].event->path, "/tmp/d/a\nb\tc");

  items = output.Feed("w-0a1b\tIGNORED\t/tmp/d/\t/");
  ASSERT_EQ(items.size(), 1u);
  EXPECT_FALSE(items[0].event) << "IGNORED is nothing a host is told";
}

TEST(InotifyEventTest, NamesMapToTheFiveTypes) {
  EXPECT_EQ(InotifyEvent("MOVED_TO", "/a")->type, "create");
  EXPECT_EQ(InotifyEvent("DELETE", "/a")->type, "remove");
  EXPECT_EQ(InotifyEvent("DELETE_SELF", "/a/")->type, "remove");
  EXPECT_EQ(InotifyEvent("DELETE_SELF", "/a/")->path, "/a");
  EXPECT_EQ(InotifyEvent("MOVED_FROM", "/a")->type, "rename");
  EXPECT_EQ(InotifyEvent("MOVE_SELF", "/a")->type, "rename");
  EXPECT_EQ(InotifyEvent("ATTRIB,ISDIR", "/a")->type, "chmod");
  EXPECT_TRUE(InotifyEvent("ATTRIB,ISDIR", "/a")->is_dir);
  EXPECT_FALSE(InotifyEvent("Q_OVERFLOW", "/a"));
}

TEST(InotifyLinesTest, ControlLinesCarryThePathAsBase64) {
  EXPECT_EQ(InotifyAddLine("w-1", true, "/tmp/a b"), "add w-1 r L3RtcC9hIGI=\n");
  EXPECT_EQ(InotifyAddLine("w-1", false, "/x"), "add w-1 n L3g=\n");
  EXPECT_EQ(InotifyDelLine("w-1"), "del w-1\n");
}

// Output of `shell -c script`.
std::string RunShell(const std::string& shell, const std::string& script) {
  char path[] = "/tmp/abx-watch-script-XXXXXX";
  const int fd = mkstemp(path);
  EXPECT_GE(fd, 0);
  EXPECT_EQ(write(fd, script.data(), script.size()), static_cast<ssize_t>(script.size()));
  close(fd);
  FILE* pipe = popen((shell + " " + path).c_str(), "r");
  std::string out;
  std::array<char, 4096> buffer;
  size_t n;
  while ((n = fread(buffer.data(), 1, buffer.size(), pipe)) > 0) out.append(buffer.data(), n);
  pclose(pipe);
  unlink(path);
  return out;
}

class PollListingTest : public ::testing::TestWithParam<const char*> {
 protected:
  void SetUp() override {
    if (access(GetParam(), X_OK) != 0) GTEST_SKIP() << GetParam() << " is not installed";
    char dir[] = "/tmp/abx-watch-tree-XXXXXX";
    ASSERT_NE(mkdtemp(dir), nullptr);
    root_ = dir;
    ASSERT_EQ(mkdir((root_ + "/sub").c_str(), 0755), 0);
    Write("/top", "1");
    Write("/.hidden", "22");
    Write("/sub/inner", "333");
    Write("/odd\tname\nhere", "4444");
  }
  void TearDown() override {
    if (!root_.empty()) std::system(("rm -rf '" + root_ + "'").c_str());
  }
  void Write(const std::string& path, const std::string& text) {
    std::ofstream out(root_ + path);
    out << text;
  }
  PollSnapshot Look(bool recursive) {
    auto blocks = ParsePollListing(RunShell(GetParam(), PollListingScript({{root_, recursive}})));
    return blocks[0];
  }

  std::string root_;
};

TEST_P(PollListingTest, OneLevelOrAllOfItOddNamesIncluded) {
  PollSnapshot flat = Look(false);
  EXPECT_TRUE(flat.count(root_)) << "the watched path itself";
  EXPECT_TRUE(flat[root_].is_dir);
  EXPECT_EQ(flat[root_ + "/top"].size, 1);
  EXPECT_EQ(flat[root_ + "/.hidden"].size, 2);
  EXPECT_EQ(flat[root_ + "/odd\tname\nhere"].size, 4);
  EXPECT_TRUE(flat[root_ + "/sub"].is_dir);
  EXPECT_FALSE(flat.count(root_ + "/sub/inner")) << "one level only";
  EXPECT_EQ(flat.size(), 5u);

  PollSnapshot deep = Look(true);
  EXPECT_EQ(deep[root_ + "/sub/inner"].size, 3);
  EXPECT_EQ(deep.size(), 6u);
}

TEST_P(PollListingTest, TwoLooksComparedGiveTheChanges) {
  const PollSnapshot before = Look(true);
  Write("/top", "longer now");
  ASSERT_EQ(chmod((root_ + "/sub/inner").c_str(), 0600), 0);
  ASSERT_EQ(unlink((root_ + "/.hidden").c_str()), 0);
  Write("/sub/new", "");
  const std::vector<WatchEvent> events = DiffSnapshots(before, Look(true));
  auto has = [&](const std::string& type, const std::string& path) {
    for (const WatchEvent& e : events) {
      if (e.type == type && e.path == root_ + path) return true;
    }
    return false;
  };
  EXPECT_TRUE(has("write", "/top"));
  EXPECT_TRUE(has("chmod", "/sub/inner"));
  EXPECT_TRUE(has("remove", "/.hidden"));
  EXPECT_TRUE(has("create", "/sub/new"));
  EXPECT_FALSE(has("write", "/sub")) << "a directory's own size and time are not a change";
  EXPECT_EQ(events.size(), 4u);
}

TEST_P(PollListingTest, AWatchedFileAndAMissingPath) {
  auto blocks = ParsePollListing(
      RunShell(GetParam(), PollListingScript({{root_ + "/top", false}, {root_ + "/missing", true}})));
  ASSERT_EQ(blocks.size(), 2u);
  EXPECT_EQ(blocks[0].size(), 1u);
  EXPECT_EQ(blocks[0][root_ + "/top"].size, 1);
  EXPECT_TRUE(blocks[1].empty());
}

INSTANTIATE_TEST_SUITE_P(Shells, PollListingTest, ::testing::Values("/bin/bash", "/bin/dash"),
                         [](const ::testing::TestParamInfo<const char*>& info) {
                           return std::string(info.param).substr(5);
                         });

// The watch host under bash with a lease of `lease_s`: its pid; in[1] writes its stdin,
// out[0] reads its stdout (the other ends are closed here).
pid_t StartHost(int lease_s, int in[2], int out[2]) {
  if (pipe(in) != 0 || pipe(out) != 0) return -1;
  const std::string script = InotifyHostScript(lease_s);
  const pid_t pid = fork();
  if (pid == 0) {
    dup2(in[0], 0);
    dup2(out[1], 1);
    close(in[1]);
    close(out[0]);
    execl("/bin/bash", "bash", "-c", script.c_str(), static_cast<char*>(nullptr));
    _exit(127);
  }
  close(in[0]);
  close(out[1]);
  return pid;
}

// The watch host, run by bash with a lease of one second: it reports a change under an added
// path, and ends by itself, with its inotifywait, once no line came for the lease.
TEST(InotifyHostTest, ReportsAndEndsWithItsInotifywaitWhenItsLeaseRunsOut) {
  if (access("/usr/bin/inotifywait", X_OK) != 0) GTEST_SKIP() << "inotifywait is not installed";
  char dir[] = "/tmp/abx-watch-host-XXXXXX";
  ASSERT_NE(mkdtemp(dir), nullptr);
  int in[2], out[2];
  const pid_t pid = StartHost(1, in, out);
  ASSERT_GT(pid, 0);
  const std::string add = InotifyAddLine("w-ab", false, dir);
  ASSERT_EQ(write(in[1], add.data(), add.size()), static_cast<ssize_t>(add.size()));
  FILE* host_out = fdopen(out[0], "r");
  InotifyOutput output;
  auto next_items = [&] {
    char line[4096];
    std::vector<InotifyOutput::Item> items;
    while (items.empty() && fgets(line, sizeof line, host_out)) {
      std::string text(line);
      if (!text.empty() && text.back() == '\n') text.pop_back();
      items = output.Feed(text);
    }
    return items;
  };
  std::string said;
  while (said.rfind("Watches established", 0) != 0) {
    auto items = next_items();
    if (items.empty()) break;
    said = items[0].text;
  }
  ASSERT_EQ(said.rfind("Watches established", 0), 0u) << said;
  std::ofstream(std::string(dir) + "/new") << "x";
  auto items = next_items();
  ASSERT_EQ(items.size(), 1u);
  EXPECT_EQ(items[0].watch_id, "w-ab");
  ASSERT_TRUE(items[0].event);
  EXPECT_EQ(items[0].event->type, "create");
  EXPECT_EQ(items[0].event->path, std::string(dir) + "/new");
  // No line for the lease (stdin stays open): the host ends, and its output with it.
  int status = 0;
  bool ended = false;
  for (int i = 0; i < 300 && !ended; ++i) {
    ended = waitpid(pid, &status, WNOHANG) == pid;
    if (!ended) usleep(10000);
  }
  EXPECT_TRUE(ended) << "the host outlived its lease";
  if (!ended) kill(pid, SIGKILL), waitpid(pid, &status, 0);
  // Its inotifywait held the output pipe too: its end is the pipe's.
  char rest[256];
  while (fgets(rest, sizeof rest, host_out)) {
  }
  EXPECT_TRUE(feof(host_out)) << "an inotifywait of the host lives on";
  fclose(host_out);
  close(in[1]);
  std::system(("rm -rf '" + std::string(dir) + "'").c_str());
}

// A watch added and deleted at once is killed between bash's fork and its exec now and
// then: that copy of the host must die alone, not take the host's other watches with it.
TEST(InotifyHostTest, AWatchDeletedAsItStartsLeavesTheOthersWatching) {
  if (access("/usr/bin/inotifywait", X_OK) != 0) GTEST_SKIP() << "inotifywait is not installed";
  char dir[] = "/tmp/abx-watch-host-XXXXXX";
  ASSERT_NE(mkdtemp(dir), nullptr);
  int in[2], out[2];
  const pid_t pid = StartHost(60, in, out);
  ASSERT_GT(pid, 0);
  auto send = [&](const std::string& text) {
    return write(in[1], text.data(), text.size()) == static_cast<ssize_t>(text.size());
  };
  // The host's next line, or "" once `timeout_ms` passed without one.
  std::string buffered;
  auto next_line = [&](int timeout_ms) {
    for (;;) {
      const size_t nl = buffered.find('\n');
      if (nl != std::string::npos) {
        std::string line = buffered.substr(0, nl);
        buffered.erase(0, nl + 1);
        return line;
      }
      pollfd p{out[0], POLLIN, 0};
      if (poll(&p, 1, timeout_ms) <= 0) return std::string();
      char chunk[4096];
      const ssize_t n = read(out[0], chunk, sizeof chunk);
      if (n <= 0) return std::string();
      buffered.append(chunk, static_cast<size_t>(n));
    }
  };
  ASSERT_TRUE(send(InotifyAddLine("w-a", false, dir)));
  std::string said;
  while (said.rfind("Watches established", 0) != 0) {
    said = next_line(10000);
    if (said.empty()) break;
  }
  ASSERT_EQ(said.rfind("Watches established", 0), 0u) << said;
  std::string churn;
  for (int i = 0; i < 40; ++i) {
    const std::string id = "w-b" + std::to_string(i);
    churn += InotifyAddLine(id, false, "/tmp") + InotifyDelLine(id);
  }
  ASSERT_TRUE(send(churn));
  InotifyOutput output;
  // Each del is answered once its inotifywait is gone; the last answer, the last of them.
  for (std::string line = next_line(10000); line != InotifyDelAnswer("w-b39"); line = next_line(10000)) {
    ASSERT_FALSE(line.empty()) << "no answer to the last del";
    for (const auto& item : output.Feed(line)) {
      EXPECT_TRUE(item.watch_id.empty()) << "an event from " << item.watch_id;
    }
  }
  std::ofstream(std::string(dir) + "/after") << "x";
  bool seen = false;
  for (std::string line = next_line(5000); !seen && !line.empty(); line = next_line(5000)) {
    for (const auto& item : output.Feed(line)) {
      seen = seen || (item.watch_id == "w-a" && item.event && item.event->path == std::string(dir) + "/after");
    }
  }
  EXPECT_TRUE(seen) << "the watch added first stopped reporting";
  close(in[1]);  // the end of its stdin ends the host and its inotifywaits
  int status = 0;
  waitpid(pid, &status, 0);
  close(out[0]);
  std::system(("rm -rf '" + std::string(dir) + "'").c_str());
}

// The probe of a bridge lists the processes of watch hosts its predecessors left (its
// owner, another instance), not its own nor another owner's.
TEST(WatchModeProbeTest, ListsThePredecessorsHostsOnly) {
  auto spawn = [](const std::string& mark) {
    const pid_t pid = fork();
    if (pid == 0) {
      const std::string variable = std::string(kWatchHostVariable) + "=" + mark;
      char* environment[] = {const_cast<char*>("A=1"), const_cast<char*>(variable.c_str()), nullptr};
      execle("/bin/sleep", "sleep", "60", static_cast<char*>(nullptr), environment);
      _exit(127);
    }
    return pid;
  };
  const pid_t predecessor = spawn(WatchHostMark("o1", "7-old"));
  const pid_t own = spawn(WatchHostMark("o1", "8-new"));
  const pid_t other_owner = spawn(WatchHostMark("o2", "7-old"));
  usleep(200000);  // each has exec'd: /proc shows its new environment
  const std::string said = RunShell("/bin/sh", WatchModeProbe("o1", "8-new"));
  const WatchProbe probe = ParseWatchProbe(said);
  ASSERT_EQ(probe.left.size(), 1u) << said;
  ASSERT_EQ(probe.left.count("7-old"), 1u) << said;
  EXPECT_EQ(probe.left.at("7-old"), std::vector<int>{predecessor}) << said;
  EXPECT_EQ(probe.inotify, access("/usr/bin/inotifywait", X_OK) == 0) << said;
  int status = 0;
  for (pid_t pid : {predecessor, own, other_owner}) kill(pid, SIGKILL), waitpid(pid, &status, 0);
}

// An instance is gone when its bridge's pid (its first part) is not running here.
TEST(WatchModeProbeTest, AnInstanceIsGoneWithItsBridgeProcess) {
  const pid_t ended = fork();
  if (ended == 0) _exit(0);
  waitpid(ended, nullptr, 0);
  const std::string running = std::to_string(getpid()) + "-a1";
  const std::string gone = std::to_string(ended) + "-b2";
  EXPECT_EQ(GoneInstances({{running, {10}}, {gone, {11, 12}}, {"no-pid", {13}}, {"x", {14}}}),
            std::vector<std::string>{gone});
}

TEST(CoalesceEventsTest, ConsecutiveAlikeEventsAreOne) {
  std::vector<WatchEvent> events = {{"write", "/a", false}, {"write", "/a", false}, {"write", "/b", false},
                                    {"write", "/a", false}};
  CoalesceEvents(&events);
  ASSERT_EQ(events.size(), 3u);
  EXPECT_EQ(events[1].path, "/b");
}

}  // namespace
}  // namespace abx::core
