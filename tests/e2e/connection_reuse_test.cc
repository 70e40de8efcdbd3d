// Upstream connections are the bridge's to keep: many short shim sessions in a row (a
// CLI that starts one shim per command) must ride the few keep-alive connections the
// shared bridge already holds, to the lifecycle server and to execd alike. Counted at
// the fake, which numbers every connection it accepts.

#include <chrono>
#include <cstdio>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "tests/e2e/harness.h"

namespace abx::e2e {
namespace {

constexpr int kSessions = 30;
constexpr int64_t kMaxConnections = 4;

// Connections the fake accepted while an action ran (lifecycle, execd), not counting the
// connections the stats calls themselves make.
struct ConnectionCount {
  int64_t lifecycle = -1;
  int64_t execd = -1;
  int64_t total() const { return lifecycle + execd; }
};

class ConnectionReuseTest : public TestEnv {
 protected:
  std::vector<std::string> FakeFlags() const override {
    return {"--api-key", kApiKey, "--sse-grace-ms", grace_ms_};
  }

  ConnectionCount ConnectionsDuring(const std::function<void()>& action) {
    ConnectionCount count;
    std::string error;
    auto first = fake().Stats(&error);
    auto second = fake().Stats(&error);
    if (!first || !second) {
      ADD_FAILURE() << "stats: " << error;
      return count;
    }
    const int64_t stats_cost = second->connections_accepted - first->connections_accepted;
    action();
    auto after = fake().Stats(&error);
    if (!after) {
      ADD_FAILURE() << "stats: " << error;
      return count;
    }
    count.lifecycle = after->connections_accepted - second->connections_accepted - stats_cost;
    count.execd = after->execd_connections_accepted - second->execd_connections_accepted;
    return count;
  }

  // One CLI command: a new shim, initialize, exec.run `true`, end of stdin, the shim gone.
  void OneShortSession(const std::string& sandbox, int index) {
    EppSession* shim = StartInitializedShim();
    ASSERT_NE(shim, nullptr) << "session " << index;
    MessagePtr ran = shim->Request(
        "exec.run", JsonObject().Str("sandbox_id", sandbox).Str("command", "true").str(),
        Millis(20000));
    ASSERT_NE(ran, nullptr) << "session " << index << ": no answer to exec.run";
    ASSERT_FALSE(ran->IsError()) << "session " << index << ": " << ran->raw;
    EXPECT_EQ(GetInt(ran->result(), "exit_code", -99), 0) << ran->raw;
    shim->CloseStdin();
    ASSERT_TRUE(shim->WaitExit(Millis(5000)).has_value())
        << "session " << index << ": the shim did not exit on end of stdin";
  }

  // A sandbox, with its execd endpoint resolved and connections open in the bridge.
  std::string WarmSandbox() {
    EppSession* setup = StartInitializedShim();
    if (setup == nullptr) return "";
    const std::string sandbox = CreateSandbox(setup);
    if (sandbox.empty()) return "";
    MessagePtr warm = setup->Request(
        "exec.run", JsonObject().Str("sandbox_id", sandbox).Str("command", "true").str(),
        Millis(20000));
    if (!warm || warm->IsError()) {
      ADD_FAILURE() << "warm-up exec.run: " << (warm ? warm->raw : std::string("no answer"));
      return "";
    }
    setup->CloseStdin();
    setup->WaitExit(Millis(5000));
    return sandbox;
  }

  // `sessions` short sessions, `pause` apart; the connections they made, checked
  // against `max_connections`.
  void RunSessionsAndCount(int sessions, Millis pause, int64_t max_connections) {
    REQUIRE_FAKE("counts connections at the fake");
    const std::string sandbox = WarmSandbox();
    ASSERT_FALSE(sandbox.empty());
    if (pause.count() > 0) std::this_thread::sleep_for(pause);
    const ConnectionCount count = ConnectionsDuring([&] {
      for (int i = 0; i < sessions && !HasFatalFailure(); ++i) {
        OneShortSession(sandbox, i);
        if (pause.count() > 0) std::this_thread::sleep_for(pause);
      }
    });
    ASSERT_FALSE(HasFatalFailure());
    ASSERT_GE(count.lifecycle, 0);
    std::printf("%d sessions (sse grace %s ms, %lld ms apart): %lld lifecycle + %lld execd "
                "connections\n",
                sessions, grace_ms_.c_str(), static_cast<long long>(pause.count()),
                static_cast<long long>(count.lifecycle), static_cast<long long>(count.execd));
    EXPECT_LE(count.total(), max_connections)
        << sessions << " short sessions made the fake accept " << count.lifecycle
        << " lifecycle and " << count.execd << " execd connections (" << count.total()
        << " in all; at most " << max_connections << " expected)";
  }

  std::string grace_ms_ = "1000";
};

// A server that ends each command's stream right after its last event (the benchmark's
// setting): back-to-back sessions share the bridge's few connections.
class ConnectionReuseNoGraceTest : public ConnectionReuseTest {
 protected:
  void SetUp() override {
    grace_ms_ = "0";
    ConnectionReuseTest::SetUp();
  }
};

TEST_F(ConnectionReuseNoGraceTest, BackToBackSessionsReuseTheBridgesConnections) {
  RunSessionsAndCount(kSessions, Millis(0), kMaxConnections);
}

// execd's real ~1 s grace after a command's last event (docs/opensandbox.md §2.5, the fake's
// default): the bridge stops reading at the terminal event but the rest of the stream is
// read out in the background, so once the grace is over the connection is reused. (A
// session that starts within the grace of the previous one needs a connection of its own:
// HTTP/1.1 cannot share one mid-response.)
TEST_F(ConnectionReuseTest, SessionsAfterTheStreamGraceReuseItsConnection) {
  RunSessionsAndCount(5, Millis(1500), 1);
}

}  // namespace
}  // namespace abx::e2e
