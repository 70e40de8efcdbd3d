// files.watch end to end (docs/epp1.md, "files.watch extension"): the real shim and bridge
// against the fake (and upstream's execd on the real-execd tier). Where the sandbox has
// inotifywait (the fake's sandboxes see this host's) the watch is an inotify one; with
// the fake's --without-program inotifywait it compares listings. Both report create,
// write, chmod and remove with absolute paths, in order for each path, also under load;
// recursive watches see below the top, others do not; a file can be watched; many watches
// on a sandbox share one stream (inotify) or one listing per interval (poll); unwatch, the
// session's end and the sandbox's end stop them and leave nothing running.

#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "tests/e2e/cpu_hog.h"
#include "tests/e2e/harness.h"
#include "tests/e2e/process.h"

namespace abx::e2e {
namespace {

using Clock = std::chrono::steady_clock;

struct Seen {
  std::string type, path;
  bool is_dir = false;
};

class WatchTest : public TestEnv {
 protected:
  void SetUp() override {
    TestEnv::SetUp();
    shim_ = StartInitializedShim(ShimOverrides());
    ASSERT_NE(shim_, nullptr);
    sandbox_ = CreateSandbox(shim_);
    ASSERT_FALSE(sandbox_.empty());
  }
  virtual std::map<std::string, std::optional<std::string>> ShimOverrides() const { return {}; }
  virtual std::string ExpectedMode() const { return "inotify"; }

  // files.watch; its watch_id ("" with a failure).
  std::string Watch(const std::string& path, bool recursive = false, EppSession* shim = nullptr) {
    MessagePtr r = (shim ? shim : shim_)->Request(
        "files.watch", JsonObject().Str("sandbox_id", sandbox_).Str("path", path).Bool("recursive", recursive).str(),
        Millis(30000));
    if (!r || r->IsError()) {
      ADD_FAILURE() << "files.watch " << path << ": " << (r ? r->raw : "no answer");
      return "";
    }
    EXPECT_EQ(GetString(r->result(), "mode"), ExpectedMode()) << r->raw;
    return GetString(r->result(), "watch_id");
  }
  bool Unwatch(const std::string& watch_id) {
    MessagePtr r = shim_->Request("files.unwatch", JsonObject().Str("watch_id", watch_id).str(), Millis(30000));
    if (!r || r->IsError()) {
      ADD_FAILURE() << "files.unwatch: " << (r ? r->raw : "no answer");
      return false;
    }
    return GetBool(r->result(), "stopped");
  }
  void Run(const std::string& command) {
    MessagePtr r = shim_->Request("exec.run", JsonObject().Str("sandbox_id", sandbox_).Str("command", command).str(),
                                  Millis(60000));
    ASSERT_NE(r, nullptr);
    ASSERT_FALSE(r->IsError()) << r->raw;
    ASSERT_EQ(GetInt(r->result(), "exit_code", -1), 0) << command << ": " << r->raw;
  }
  std::string Output(const std::string& command) {
    MessagePtr r = shim_->Request("exec.run", JsonObject().Str("sandbox_id", sandbox_).Str("command", command).str(),
                                  Millis(60000));
    if (!r || r->IsError()) return "";
    return GetString(r->result(), "stdout");
  }
  // Every event of `watch_id` so far, in order.
  std::vector<Seen> Events(const std::string& watch_id, EppSession* shim = nullptr) {
    std::vector<Seen> seen;
    for (const MessagePtr& m : (shim ? shim : shim_)->NotificationsByMethod("files.event")) {
      if (GetString(m->params(), "watch_id") != watch_id) continue;
      const rapidjson::Value* events = Find(m->params(), "events");
      if (!events || !events->IsArray()) continue;
      for (const rapidjson::Value& e : events->GetArray()) {
        seen.push_back({GetString(e, "type"), GetString(e, "path"), GetBool(e, "is_dir")});
      }
    }
    return seen;
  }
  // Waits until `watch_id` has seen `type` for `path`; how long that took.
  std::optional<Millis> AwaitEvent(const std::string& watch_id, const std::string& type, const std::string& path,
                                   Millis timeout = Millis(10000)) {
    const auto start = Clock::now();
    while (Clock::now() - start < timeout) {
      for (const Seen& s : Events(watch_id)) {
        if (s.type == type && s.path == path) {
          return std::chrono::duration_cast<Millis>(Clock::now() - start);
        }
      }
      std::this_thread::sleep_for(Millis(20));
    }
    return std::nullopt;
  }
  static std::string Describe(const std::vector<Seen>& seen) {
    std::string text;
    for (const Seen& s : seen) text += s.type + " " + s.path + (s.is_dir ? "/" : "") + "; ";
    return text;
  }
  // The first index of (type, path) in `seen`, or -1.
  static int IndexOf(const std::vector<Seen>& seen, const std::string& type, const std::string& path) {
    for (size_t i = 0; i < seen.size(); ++i) {
      if (seen[i].type == type && seen[i].path == path) return static_cast<int>(i);
    }
    return -1;
  }
  // Processes of this sandbox whose command line holds "inotifywait", with this test's
  // own probe left out.
  std::string Watchers() {
    return Output("n=inotify; n=${n}wait; for p in /proc/[0-9]*; do [ \"$p/root\" -ef / ] || continue; "
                  "tr '\\0' ' ' < $p/cmdline 2>/dev/null | grep -F \"$n\" && echo; done; true");
  }

  // SIGKILL to the bridge; true once the session is served again (the shim starts a new
  // bridge; a request in flight as the old one died is answered with an error).
  bool KillBridgeForANewOne() {
    auto bridge = BridgePid();
    if (!bridge || ::kill(*bridge, SIGKILL) != 0) return false;
    for (const auto deadline = Clock::now() + Millis(10000); Clock::now() < deadline;) {
      MessagePtr r = shim_->Request("exec.run", JsonObject().Str("sandbox_id", sandbox_).Str("command", "true").str(),
                                    Millis(10000));
      if (r && !r->IsError()) return true;
    }
    return false;
  }

  // Watchers(), asked again for up to 10 s until there are none: "" once they are gone.
  std::string WatchersOnceGone() {
    std::string left;
    for (const auto deadline = Clock::now() + Millis(10000); Clock::now() < deadline;) {
      left = Watchers();
      if (left.empty()) break;
      std::this_thread::sleep_for(Millis(100));
    }
    return left;
  }

  EppSession* shim_ = nullptr;
  std::string sandbox_;
};

TEST_F(WatchTest, ChangesInADirectoryAreReportedInOrder) {
  Run("mkdir -p /tmp/w1");
  const std::string watch = Watch("/tmp/w1");
  ASSERT_FALSE(watch.empty());
  Run("echo a > /tmp/w1/f && echo b >> /tmp/w1/f && chmod 600 /tmp/w1/f && mkdir /tmp/w1/d");
  ASSERT_TRUE(AwaitEvent(watch, "create", "/tmp/w1/d")) << Describe(Events(watch));
  Run("rm /tmp/w1/f");
  ASSERT_TRUE(AwaitEvent(watch, "remove", "/tmp/w1/f")) << Describe(Events(watch));
  const std::vector<Seen> seen = Events(watch);
  const int created = IndexOf(seen, "create", "/tmp/w1/f");
  const int written = IndexOf(seen, "write", "/tmp/w1/f");
  const int chmodded = IndexOf(seen, "chmod", "/tmp/w1/f");
  const int removed = IndexOf(seen, "remove", "/tmp/w1/f");
  ASSERT_GE(created, 0) << Describe(seen);
  ASSERT_GE(chmodded, 0) << Describe(seen);
  EXPECT_LT(created, chmodded) << Describe(seen);
  EXPECT_LT(chmodded, removed) << Describe(seen);
  if (ExpectedMode() == "inotify") {
    ASSERT_GE(written, 0) << Describe(seen);
    EXPECT_LT(created, written) << Describe(seen);
  }
  const int dir = IndexOf(seen, "create", "/tmp/w1/d");
  EXPECT_TRUE(seen[static_cast<size_t>(dir)].is_dir) << Describe(seen);
  EXPECT_TRUE(Unwatch(watch));
  EXPECT_FALSE(Unwatch(watch)) << "a stopped watch stopped again";
}

TEST_F(WatchTest, RecursiveWatchesSeeBelowTheTopOthersDoNot) {
  Run("mkdir -p /tmp/w2/sub");
  const std::string deep = Watch("/tmp/w2", true);
  const std::string flat = Watch("/tmp/w2", false);
  ASSERT_FALSE(deep.empty());
  ASSERT_FALSE(flat.empty());
  Run("touch /tmp/w2/sub/inner /tmp/w2/top");
  ASSERT_TRUE(AwaitEvent(deep, "create", "/tmp/w2/sub/inner")) << Describe(Events(deep));
  ASSERT_TRUE(AwaitEvent(flat, "create", "/tmp/w2/top")) << Describe(Events(flat));
  ASSERT_TRUE(AwaitEvent(deep, "create", "/tmp/w2/top")) << Describe(Events(deep));
  EXPECT_EQ(IndexOf(Events(flat), "create", "/tmp/w2/sub/inner"), -1) << Describe(Events(flat));
}

TEST_F(WatchTest, AFileCanBeWatchedAndAMissingPathIsE8005) {
  Run("echo one > /tmp/w3-file");
  const std::string watch = Watch("/tmp/w3-file");
  ASSERT_FALSE(watch.empty());
  Run("echo two >> /tmp/w3-file");
  EXPECT_TRUE(AwaitEvent(watch, "write", "/tmp/w3-file")) << Describe(Events(watch));
  MessagePtr missing = shim_->Request(
      "files.watch", JsonObject().Str("sandbox_id", sandbox_).Str("path", "/tmp/no-such-dir").str(), Millis(30000));
  ASSERT_NE(missing, nullptr);
  EXPECT_EQ(missing->EppCode(), "E8005") << missing->raw;
  MessagePtr unknown = shim_->Request("files.unwatch", JsonObject().Str("watch_id", "w-nothing").str());
  ASSERT_NE(unknown, nullptr);
  EXPECT_FALSE(GetBool(unknown->result(), "stopped", true)) << unknown->raw;
}

TEST_F(WatchTest, EventsOfOnePathKeepTheirOrderUnderLoad) {
  CpuHog hog;
  Run("mkdir -p /tmp/w4");
  const std::string watch = Watch("/tmp/w4");
  ASSERT_FALSE(watch.empty());
  for (int i = 0; i < 5; ++i) {
    const std::string path = "/tmp/w4/f" + std::to_string(i);
    Run("touch " + path + " && chmod 700 " + path);
    ASSERT_TRUE(AwaitEvent(watch, "chmod", path)) << Describe(Events(watch));
    Run("rm " + path);
    ASSERT_TRUE(AwaitEvent(watch, "remove", path)) << Describe(Events(watch));
    const std::vector<Seen> seen = Events(watch);
    EXPECT_LT(IndexOf(seen, "create", path), IndexOf(seen, "chmod", path)) << Describe(seen);
    EXPECT_LT(IndexOf(seen, "chmod", path), IndexOf(seen, "remove", path)) << Describe(seen);
  }
}

TEST_F(WatchTest, ManyWatchesShareOneStreamAndUnwatchLeavesNothing) {
  Run("mkdir -p /tmp/w5 && for i in $(seq 0 15); do mkdir -p /tmp/w5/d$i; done");
  std::vector<std::string> watches;
  for (int i = 0; i < 16; ++i) watches.push_back(Watch("/tmp/w5/d" + std::to_string(i)));
  for (const std::string& w : watches) ASSERT_FALSE(w.empty());
  Run("touch /tmp/w5/d7/x");
  EXPECT_TRUE(AwaitEvent(watches[7], "create", "/tmp/w5/d7/x")) << Describe(Events(watches[7]));
  EXPECT_EQ(IndexOf(Events(watches[6]), "create", "/tmp/w5/d7/x"), -1);
  if (ExpectedMode() == "inotify") {
    // One host: a single bash of the watch host (its command line holds the script) and one
    // inotifywait per watch.
    const std::string running = Watchers();
    size_t inotifywaits = 0;
    for (size_t at = running.find("inotifywait -m"); at != std::string::npos;
         at = running.find("inotifywait -m", at + 1)) {
      ++inotifywaits;
    }
    EXPECT_GE(inotifywaits, 16u) << running;
  } else if (!live() && RealExecdTier().empty()) {
    // One listing per interval (300 ms here) for all sixteen: a few execd requests a
    // second, not sixteen times as many.
    auto requests = [&] { return fake().Stats()->execd_requests; };
    const int64_t before = requests();
    std::this_thread::sleep_for(Millis(3000));
    const int64_t per_second = (requests() - before) / 3;
    EXPECT_LE(per_second, 8) << "execd requests a second for 16 polled watches";
  }
  for (const std::string& w : watches) EXPECT_TRUE(Unwatch(w));
  EXPECT_EQ(WatchersOnceGone(), "") << "still watching after every watch stopped";
}

TEST_F(WatchTest, TheSessionsEndStopsItsWatches) {
  EppSession* other = StartInitializedShim(ShimOverrides());
  ASSERT_NE(other, nullptr);
  Run("mkdir -p /tmp/w6");
  ASSERT_FALSE(Watch("/tmp/w6", true, other).empty());
  if (ExpectedMode() == "inotify") {
    EXPECT_NE(Watchers(), "");
  }
  other->CloseStdin();
  ASSERT_TRUE(other->WaitExit(Millis(10000)).has_value());
  EXPECT_EQ(WatchersOnceGone(), "") << "a watch outlived its session";
}

TEST_F(WatchTest, ASandboxThatEndsEndsItsWatchesOnce) {
  Run("mkdir -p /tmp/w7");
  const std::string watch = Watch("/tmp/w7");
  ASSERT_FALSE(watch.empty());
  MessagePtr killed = shim_->Request("sandbox.kill", JsonObject().Str("sandbox_id", sandbox_).str(), Millis(30000));
  ASSERT_NE(killed, nullptr);
  ASSERT_FALSE(killed->IsError()) << killed->raw;
  std::vector<MessagePtr> ended;
  for (const auto deadline = Clock::now() + Millis(20000); Clock::now() < deadline && ended.empty();) {
    for (const MessagePtr& m : shim_->NotificationsByMethod("files.event")) {
      if (GetString(m->params(), "watch_id") == watch && Find(m->params(), "ended")) ended.push_back(m);
    }
    std::this_thread::sleep_for(Millis(50));
  }
  ASSERT_EQ(ended.size(), 1u) << "no ended event for a watch of a killed sandbox";
  EXPECT_FALSE(GetString(ended[0]->params(), "ended").empty()) << ended[0]->raw;
  std::this_thread::sleep_for(Millis(1500));
  size_t count = 0;
  for (const MessagePtr& m : shim_->NotificationsByMethod("files.event")) {
    if (GetString(m->params(), "watch_id") == watch && Find(m->params(), "ended")) ++count;
  }
  EXPECT_EQ(count, 1u);
}

// A files.watch cancelled while it starts (or just after) is that watch's business alone:
// the sandbox's other watches go on reporting, and nothing of it is left in the sandbox.
// (The host once killed such a watch's inotifywait with SIGTERM, and one killed before
// its exec ran the host's exit trap and ended every watch.)
TEST_F(WatchTest, ACancelledWatchLeavesTheOthersRunning) {
  Run("mkdir -p /tmp/w9/a /tmp/w9/b");
  const std::string kept = Watch("/tmp/w9/a");
  ASSERT_FALSE(kept.empty());
  std::vector<std::string> answered;  // a cancel that came too late
  for (int delay_ms : {0, 1, 5, 20, 50}) {
    const int64_t id = shim_->SendRequest(
        "files.watch", JsonObject().Str("sandbox_id", sandbox_).Str("path", "/tmp/w9/b").str());
    std::this_thread::sleep_for(Millis(delay_ms));
    shim_->Notify("$/cancel", "{\"id\":" + std::to_string(id) + "}");
    MessagePtr answer = shim_->WaitResponse(id, Millis(30000));
    ASSERT_NE(answer, nullptr) << "no answer to a cancelled files.watch";
    if (answer->IsError()) {
      EXPECT_EQ(answer->EppCode(), "E8009") << answer->raw;
    } else {
      answered.push_back(GetString(answer->result(), "watch_id"));
    }
  }
  Run("touch /tmp/w9/a/after");
  EXPECT_TRUE(AwaitEvent(kept, "create", "/tmp/w9/a/after")) << Describe(Events(kept)) << "\nwatchers: " << Watchers();
  EXPECT_TRUE(Unwatch(kept));
  for (const std::string& watch : answered) EXPECT_TRUE(Unwatch(watch));
  if (ExpectedMode() == "inotify") {
    EXPECT_EQ(WatchersOnceGone(), "") << "a cancelled watch left its inotifywait";
  }
}

// The CLI a person uses: `abx-opensandbox-bridge watch SANDBOX PATH --recursive` prints one
// line per change until ^C, which ends it with 0 and stops the watch.
TEST_F(WatchTest, TheBridgeCliPrintsALinePerChangeUntilInterrupted) {
  Run("mkdir -p /tmp/w8/sub");
  Process::Options options;
  options.argv = {BridgeBinary(), "watch", sandbox_, "/tmp/w8", "--recursive", "--socket", socket_path()};
  options.env = ShimEnv(ShimOverrides());
  options.pipe_stdout = true;
  options.output_file = root_dir() + "/watch-cli.log";
  std::string error;
  auto cli = Process::Start(options, &error);
  ASSERT_NE(cli, nullptr) << error;
  std::string printed;
  auto read_until = [&](const std::string& needle) {
    for (const auto deadline = Clock::now() + Millis(15000); Clock::now() < deadline;) {
      if (printed.find(needle) != std::string::npos) return true;
      if (!WaitReadable(cli->stdout_fd(), Millis(100))) continue;
      char buffer[4096];
      const ssize_t n = read(cli->stdout_fd(), buffer, sizeof buffer);
      if (n <= 0) return false;
      printed.append(buffer, static_cast<size_t>(n));
    }
    return printed.find(needle) != std::string::npos;
  };
  // Watching has begun once it says so on stderr; until then a change may come too soon.
  for (const auto deadline = Clock::now() + Millis(15000);
       Clock::now() < deadline && ReadFile(options.output_file).find("watching") == std::string::npos;) {
    std::this_thread::sleep_for(Millis(20));
  }
  ASSERT_NE(ReadFile(options.output_file).find("watching /tmp/w8"), std::string::npos) << ReadFile(options.output_file);
  Run("touch /tmp/w8/sub/file && mkdir /tmp/w8/dir");
  EXPECT_TRUE(read_until("create /tmp/w8/sub/file\n")) << printed;
  EXPECT_TRUE(read_until("create /tmp/w8/dir/\n")) << printed;
  ASSERT_TRUE(cli->Signal(SIGINT));
  auto status = cli->WaitExit(Millis(10000));
  ASSERT_TRUE(status.has_value());
  EXPECT_TRUE(status->exited && status->code == 0) << status->ToString() << " " << ReadFile(options.output_file);
  if (ExpectedMode() == "inotify") {
    EXPECT_EQ(WatchersOnceGone(), "") << "the watch outlived the CLI";
  }
}

// A bridge that is killed leaves its watch host in the sandbox for at most its lease (6 s
// here, ABX_OPENSANDBOX_BRIDGE_SANDBOX_LEASE): no ping comes, the host's stdin pipe closes
// and the host ends with every inotifywait it started.
class WatchLeaseTest : public WatchTest {
 protected:
  std::map<std::string, std::optional<std::string>> ShimOverrides() const override {
    return {{"ABX_OPENSANDBOX_BRIDGE_SANDBOX_LEASE", "6"}};
  }
};

TEST_F(WatchLeaseTest, AKilledBridgesWatchHostEndsWithinItsLease) {
  Run("mkdir -p /tmp/w10");
  ASSERT_FALSE(Watch("/tmp/w10").empty());
  ASSERT_FALSE(Watchers().empty());
  auto bridge = BridgePid();
  ASSERT_TRUE(bridge.has_value());
  ASSERT_TRUE(KillBridgeForANewOne());
  std::string left = Watchers();
  for (const auto deadline = Clock::now() + Millis(30000); Clock::now() < deadline && !left.empty();) {
    std::this_thread::sleep_for(Millis(500));
    left = Watchers();
  }
  EXPECT_EQ(left, "") << "the watch host outlived its lease";
}

// A bridge killed with a watch running leaves its host in the sandbox (for up to its lease,
// 90 s here); the next bridge of the same user and build ends it when it first watches
// there.
TEST_F(WatchTest, ANewBridgeEndsItsPredecessorsWatchHost) {
  Run("mkdir -p /tmp/w11/a /tmp/w11/b");
  ASSERT_FALSE(Watch("/tmp/w11/a").empty());
  ASSERT_NE(Watchers().find("/tmp/w11/a"), std::string::npos) << Watchers();
  ASSERT_TRUE(KillBridgeForANewOne());
  ASSERT_NE(Watchers().find("/tmp/w11/a"), std::string::npos) << "the host went with its bridge";
  ASSERT_FALSE(Watch("/tmp/w11/b").empty());
  const std::string left = Watchers();
  EXPECT_EQ(left.find("/tmp/w11/a"), std::string::npos) << "the predecessor's host lives on: " << left;
  EXPECT_NE(left.find("/tmp/w11/b"), std::string::npos) << left;
}

// The same where the sandbox has no inotifywait: listings compared every 300 ms.
class PollWatchTest : public WatchTest {
 protected:
  void SetUp() override {
    REQUIRE_FAKE("a sandbox without inotifywait (--without-program)");
    WatchTest::SetUp();
  }
  std::vector<std::string> FakeFlags() const override {
    auto flags = TestEnv::FakeFlags();
    flags.insert(flags.end(), {"--without-program", "inotifywait"});
    return flags;
  }
  std::map<std::string, std::optional<std::string>> ShimOverrides() const override {
    return {{"ABX_OPENSANDBOX_WATCH_INTERVAL_MS", "300"}};
  }
  std::string ExpectedMode() const override { return "poll"; }
};

TEST_F(PollWatchTest, ChangesInADirectoryAreReportedInOrder) {
  Run("mkdir -p /tmp/p1");
  const std::string watch = Watch("/tmp/p1");
  ASSERT_FALSE(watch.empty());
  Run("echo a > /tmp/p1/f && mkdir /tmp/p1/d");
  ASSERT_TRUE(AwaitEvent(watch, "create", "/tmp/p1/f")) << Describe(Events(watch));
  ASSERT_TRUE(AwaitEvent(watch, "create", "/tmp/p1/d")) << Describe(Events(watch));
  Run("echo b >> /tmp/p1/f");
  ASSERT_TRUE(AwaitEvent(watch, "write", "/tmp/p1/f")) << Describe(Events(watch));
  Run("chmod 600 /tmp/p1/f");
  ASSERT_TRUE(AwaitEvent(watch, "chmod", "/tmp/p1/f")) << Describe(Events(watch));
  Run("mv /tmp/p1/f /tmp/p1/g");
  // A rename is a remove and a create between two looks.
  ASSERT_TRUE(AwaitEvent(watch, "remove", "/tmp/p1/f")) << Describe(Events(watch));
  ASSERT_TRUE(AwaitEvent(watch, "create", "/tmp/p1/g")) << Describe(Events(watch));
  EXPECT_TRUE(Unwatch(watch));
}

TEST_F(PollWatchTest, RecursiveWatchesSeeBelowTheTopOthersDoNot) {
  Run("mkdir -p /tmp/p2/sub");
  const std::string deep = Watch("/tmp/p2", true);
  const std::string flat = Watch("/tmp/p2", false);
  ASSERT_FALSE(deep.empty());
  ASSERT_FALSE(flat.empty());
  Run("touch /tmp/p2/sub/inner /tmp/p2/top");
  ASSERT_TRUE(AwaitEvent(deep, "create", "/tmp/p2/sub/inner")) << Describe(Events(deep));
  ASSERT_TRUE(AwaitEvent(flat, "create", "/tmp/p2/top")) << Describe(Events(flat));
  EXPECT_EQ(IndexOf(Events(flat), "create", "/tmp/p2/sub/inner"), -1) << Describe(Events(flat));
}

TEST_F(PollWatchTest, ManyWatchesShareOneListingPerInterval) {
  Run("mkdir -p /tmp/p5 && for i in $(seq 0 15); do mkdir -p /tmp/p5/d$i; done");
  std::vector<std::string> watches;
  for (int i = 0; i < 16; ++i) watches.push_back(Watch("/tmp/p5/d" + std::to_string(i)));
  for (const std::string& w : watches) ASSERT_FALSE(w.empty());
  Run("touch /tmp/p5/d7/x");
  EXPECT_TRUE(AwaitEvent(watches[7], "create", "/tmp/p5/d7/x")) << Describe(Events(watches[7]));
  if (!RealExecdTier().empty()) {
    // The count below is the fake's execd's; upstream's counts nothing for the fake.
    for (const std::string& w : watches) EXPECT_TRUE(Unwatch(w));
    return;
  }
  auto requests = [&] { return fake().Stats()->execd_requests; };
  const int64_t before = requests();
  std::this_thread::sleep_for(Millis(3000));
  const int64_t per_second = (requests() - before) / 3;
  // 300 ms apart: about three listings a second, whatever the number of watches.
  EXPECT_LE(per_second, 6) << "execd requests a second for 16 polled watches";
  EXPECT_GE(per_second, 2) << "the listings stopped";
  for (const std::string& w : watches) EXPECT_TRUE(Unwatch(w));
  const int64_t after_unwatch = requests();
  std::this_thread::sleep_for(Millis(1500));
  EXPECT_LE(requests() - after_unwatch, 1) << "still listing after every watch stopped";
}

}  // namespace
}  // namespace abx::e2e
