// Which upstream calls the bridge sends again after a transient failure, and which it
// never repeats (bridge/opensandbox/http_caller.cc: 3 attempts, 100 ms then 300 ms apart, on no
// connection / a dropped connection / 502-503-504, only for calls marked idempotent).
//
// The failure is made deterministic, not random: the fake reads its fault switches once
// per request, on arrival, and then sleeps `latency_ms` before answering. So the test
// turns a fault on together with a long latency, waits until the fake has counted the
// first attempt (its answer is now decided: a failure), and switches everything off
// before the bridge's second attempt can arrive (the first answer alone takes
// `latency_ms`). A retried call then succeeds with exactly one request more than the
// same call costs without faults; a call that must not be repeated fails after exactly
// one request, although the server is healthy again by the time it answers.

#include <string>
#include <thread>

#include <gtest/gtest.h>
#include <unistd.h>

#include "tests/e2e/harness.h"

namespace abx::e2e {
namespace {

// The fake's answer to a first attempt is decided on arrival and sent this much later.
// Long enough that switching the fault off never races the retry (100 ms after that
// answer) even on a loaded machine; short enough to keep the test quick.
constexpr int kFirstAnswerDelayMs = 2500;

// One request's worth of faults for each listener (see tests/fake-opensandbox/README.md).
const std::string kLifecycleFault =
    R"({"error_rate":1.0,"latency_ms":)" + std::to_string(kFirstAnswerDelayMs) + "}";
const std::string kExecdFault =
    R"({"execd_down":true,"latency_ms":)" + std::to_string(kFirstAnswerDelayMs) + "}";

enum class Listener { kLifecycle, kExecd };

struct Counts {
  int64_t lifecycle = 0;
  int64_t execd = 0;
};

// What one call cost upstream, and how it was answered.
struct Outcome {
  MessagePtr response;
  Counts requests;  // upstream requests the call made
  int64_t millis = 0;
};

class RetryTest : public TestEnv {
 protected:
  void SetUp() override {
    REQUIRE_FAKE("fault switches (/_fake/faults) and request counts (/_fake/stats)");
    TestEnv::SetUp();
    if (HasFatalFailure()) return;
    ASSERT_TRUE(StartShimWithSandbox(&shim_, &sandbox_));
  }

  Counts Now() {
    std::string error;
    auto stats = fake().Stats(&error);
    if (!stats) {
      ADD_FAILURE() << error;
      return {};
    }
    return {stats->requests, stats->execd_requests};
  }

  static int64_t Of(const Counts& c, Listener l) {
    return l == Listener::kLifecycle ? c.lifecycle : c.execd;
  }

  // Runs `method` with no faults on.
  Outcome Plain(const std::string& method, const std::string& params) {
    Outcome out;
    const Counts before = Now();
    const auto start = Clock::now();
    out.response = shim_->Request(method, params, Millis(20000));
    out.millis = std::chrono::duration_cast<Millis>(Clock::now() - start).count();
    const Counts after = Now();
    out.requests = {after.lifecycle - before.lifecycle, after.execd - before.execd};
    return out;
  }

  // Runs `method` while `fault_json` is on for exactly its first request to `listener`:
  // the faults are cleared as soon as the fake has counted that request.
  Outcome FirstAttemptFails(const std::string& method, const std::string& params,
                            const std::string& fault_json, Listener listener) {
    Outcome out;
    std::string error;
    const Counts before = Now();
    if (!fake().SetFaults(fault_json, &error)) {
      ADD_FAILURE() << error;
      return out;
    }
    const auto start = Clock::now();
    const int64_t id = shim_->SendRequest(method, params);
    const auto deadline = Clock::now() + Millis(10000);
    bool arrived = false;
    while (!arrived && Clock::now() < deadline) {
      auto stats = fake().Stats();
      arrived = stats && Of({stats->requests, stats->execd_requests}, listener) >
                             Of(before, listener);
      if (!arrived) std::this_thread::sleep_for(Millis(2));
    }
    EXPECT_TRUE(fake().ClearFaults(&error)) << error;
    const int64_t cleared_ms = std::chrono::duration_cast<Millis>(Clock::now() - start).count();
    EXPECT_TRUE(arrived) << method << ": no upstream request reached the fake in 10 s";
    // The premise: the first attempt arrived after the request was sent, so the faults
    // were off before its answer (and so before any second attempt) when this holds.
    EXPECT_LT(cleared_ms, kFirstAnswerDelayMs)
        << method << ": the machine was too slow to switch the fault off in time";
    out.response = shim_->WaitResponse(id, Millis(20000));
    out.millis = std::chrono::duration_cast<Millis>(Clock::now() - start).count();
    const Counts after = Now();
    out.requests = {after.lifecycle - before.lifecycle, after.execd - before.execd};
    return out;
  }

  std::string SandboxParams() const { return JsonObject().Str("sandbox_id", sandbox_).str(); }

  EppSession* shim_ = nullptr;
  std::string sandbox_;
};

std::string Describe(const Outcome& o) {
  return "lifecycle requests " + std::to_string(o.requests.lifecycle) + ", execd requests " +
         std::to_string(o.requests.execd) + ", " + std::to_string(o.millis) + " ms, answer " +
         (o.response ? Abbreviate(o.response->raw, 600) : std::string("none"));
}

// --- Idempotent calls: one transient failure is absorbed by exactly one retry. ---

TEST_F(RetryTest, SandboxGetIsRetriedOnceThroughA503) {
  const Outcome plain = Plain("sandbox.get", SandboxParams());
  ASSERT_NE(plain.response, nullptr);
  ASSERT_FALSE(plain.response->IsError()) << Describe(plain);
  const Outcome faulty =
      FirstAttemptFails("sandbox.get", SandboxParams(), kLifecycleFault, Listener::kLifecycle);
  ASSERT_NE(faulty.response, nullptr) << Describe(faulty);
  ASSERT_FALSE(faulty.response->IsError()) << Describe(faulty);
  EXPECT_EQ(GetString(faulty.response->result(), "id"), sandbox_) << Describe(faulty);
  EXPECT_EQ(faulty.requests.lifecycle, plain.requests.lifecycle + 1) << Describe(faulty);
  EXPECT_EQ(faulty.requests.execd, plain.requests.execd) << Describe(faulty);
}

TEST_F(RetryTest, SandboxListIsRetriedOnceThroughA503) {
  const Outcome plain = Plain("sandbox.list", "{}");
  ASSERT_NE(plain.response, nullptr);
  ASSERT_FALSE(plain.response->IsError()) << Describe(plain);
  const Outcome faulty = FirstAttemptFails("sandbox.list", "{}", kLifecycleFault,
                                           Listener::kLifecycle);
  ASSERT_NE(faulty.response, nullptr) << Describe(faulty);
  ASSERT_FALSE(faulty.response->IsError()) << Describe(faulty);
  EXPECT_EQ(GetString(faulty.response->result(), "sandboxes.0.id"), sandbox_) << Describe(faulty);
  EXPECT_EQ(faulty.requests.lifecycle, plain.requests.lifecycle + 1) << Describe(faulty);
}

TEST_F(RetryTest, SandboxKillIsRetriedOnceThroughA503) {
  const std::string other = CreateSandbox(shim_);
  ASSERT_FALSE(other.empty());
  const Outcome plain = Plain("sandbox.kill", JsonObject().Str("sandbox_id", other).str());
  ASSERT_NE(plain.response, nullptr);
  ASSERT_TRUE(GetBool(plain.response->result(), "killed", false)) << Describe(plain);
  const Outcome faulty =
      FirstAttemptFails("sandbox.kill", SandboxParams(), kLifecycleFault, Listener::kLifecycle);
  ASSERT_NE(faulty.response, nullptr) << Describe(faulty);
  ASSERT_FALSE(faulty.response->IsError()) << Describe(faulty);
  // The failed first DELETE had no effect (503 before any effect), so the retry is the
  // one that kills: "killed" is true, not the "already gone" false.
  EXPECT_TRUE(GetBool(faulty.response->result(), "killed", false)) << Describe(faulty);
  EXPECT_EQ(faulty.requests.lifecycle, plain.requests.lifecycle + 1) << Describe(faulty);
  auto stats = fake().Stats();
  ASSERT_TRUE(stats.has_value());
  EXPECT_EQ(stats->live_sandboxes, 0);
}

TEST_F(RetryTest, FilesStatIsRetriedOnceThroughAnExecd503) {
  REQUIRE_FAKE_EXECD("the execd_down fault switch and the execd_requests count");
  MessagePtr written = shim_->Request(
      "files.write",
      JsonObject().Str("sandbox_id", sandbox_).Str("path", "/tmp/r.txt").Str("data", "abc").str());
  ASSERT_NE(written, nullptr);
  ASSERT_FALSE(written->IsError()) << written->raw;
  const std::string params =
      JsonObject().Str("sandbox_id", sandbox_).Str("path", "/tmp/r.txt").str();
  const Outcome plain = Plain("files.stat", params);
  ASSERT_NE(plain.response, nullptr);
  ASSERT_FALSE(plain.response->IsError()) << Describe(plain);
  const Outcome faulty = FirstAttemptFails("files.stat", params, kExecdFault, Listener::kExecd);
  ASSERT_NE(faulty.response, nullptr) << Describe(faulty);
  ASSERT_FALSE(faulty.response->IsError()) << Describe(faulty);
  EXPECT_EQ(GetInt(faulty.response->result(), "size", -1), 3) << Describe(faulty);
  EXPECT_EQ(faulty.requests.execd, plain.requests.execd + 1) << Describe(faulty);
}

TEST_F(RetryTest, FilesReadIsRetriedOnceThroughAnExecd503) {
  REQUIRE_FAKE_EXECD("the execd_down fault switch and the execd_requests count");
  const std::string content = "line one\nline two\n";
  MessagePtr written = shim_->Request(
      "files.write",
      JsonObject().Str("sandbox_id", sandbox_).Str("path", "/tmp/r.txt").Str("data", content).str());
  ASSERT_NE(written, nullptr);
  ASSERT_FALSE(written->IsError()) << written->raw;
  const std::string params =
      JsonObject().Str("sandbox_id", sandbox_).Str("path", "/tmp/r.txt").str();
  const Outcome plain = Plain("files.read", params);
  ASSERT_NE(plain.response, nullptr);
  ASSERT_FALSE(plain.response->IsError()) << Describe(plain);
  const Outcome faulty = FirstAttemptFails("files.read", params, kExecdFault, Listener::kExecd);
  ASSERT_NE(faulty.response, nullptr) << Describe(faulty);
  ASSERT_FALSE(faulty.response->IsError()) << Describe(faulty);
  EXPECT_EQ(GetString(faulty.response->result(), "data"), content) << Describe(faulty);
  EXPECT_EQ(faulty.requests.execd, plain.requests.execd + 1) << Describe(faulty);
}

// --- A failure that lasts: the retries are bounded, then the error is reported. ---

TEST_F(RetryTest, PersistentLifecycle503IsTriedExactlyThreeTimes) {
  std::string error;
  ASSERT_TRUE(fake().SetFaults(R"({"error_rate":1.0})", &error)) << error;
  const Outcome o = Plain("sandbox.get", SandboxParams());
  ASSERT_TRUE(fake().ClearFaults(&error)) << error;
  ASSERT_NE(o.response, nullptr) << Describe(o);
  ASSERT_TRUE(o.response->IsError()) << Describe(o);
  EXPECT_TRUE(o.response->EppCode() == "E8002" || o.response->EppCode() == "E8010") << Describe(o);
  EXPECT_EQ(o.requests.lifecycle, 3) << Describe(o);
  EXPECT_GE(o.millis, 380) << "the backoff (100 + 300 ms) was skipped: " << Describe(o);
}

TEST_F(RetryTest, PersistentExecd503IsTriedExactlyThreeTimes) {
  REQUIRE_FAKE_EXECD("the execd_down fault switch and the execd_requests count");
  const std::string params = JsonObject().Str("sandbox_id", sandbox_).Str("path", "/tmp").str();
  std::string error;
  ASSERT_TRUE(fake().SetFaults(R"({"execd_down":true})", &error)) << error;
  const Outcome o = Plain("files.stat", params);
  ASSERT_TRUE(fake().ClearFaults(&error)) << error;
  ASSERT_NE(o.response, nullptr) << Describe(o);
  ASSERT_TRUE(o.response->IsError()) << Describe(o);
  EXPECT_EQ(o.requests.execd, 3) << Describe(o);
}

TEST_F(RetryTest, MalformedAnswerIsNotRetried) {
  // A body cut in half is no transient transport failure: E8010 after one request.
  std::string error;
  ASSERT_TRUE(fake().SetFaults(R"({"garbage_body":1.0})", &error)) << error;
  const Outcome o = Plain("sandbox.get", SandboxParams());
  ASSERT_TRUE(fake().ClearFaults(&error)) << error;
  ASSERT_NE(o.response, nullptr) << Describe(o);
  ASSERT_TRUE(o.response->IsError()) << Describe(o);
  EXPECT_EQ(o.response->EppCode(), "E8010") << Describe(o);
  EXPECT_EQ(o.requests.lifecycle, 1) << Describe(o);
}

// --- Calls that change state are sent once, even when the server recovers at once. ---

TEST_F(RetryTest, SandboxCreateIsNeverRepeated) {
  auto before = fake().Stats();
  ASSERT_TRUE(before.has_value());
  const Outcome o = FirstAttemptFails("sandbox.create", R"({"template":"base"})",
                                      kLifecycleFault, Listener::kLifecycle);
  ASSERT_NE(o.response, nullptr) << Describe(o);
  ASSERT_TRUE(o.response->IsError()) << "a create was sent again: " << Describe(o);
  EXPECT_TRUE(o.response->EppCode() == "E8002" || o.response->EppCode() == "E8010") << Describe(o);
  EXPECT_EQ(o.requests.lifecycle, 1) << Describe(o);
  std::this_thread::sleep_for(Millis(500));  // a late second POST would show by now
  auto after = fake().Stats();
  ASSERT_TRUE(after.has_value());
  EXPECT_EQ(after->requests - before->requests, 1);
  EXPECT_EQ(after->live_sandboxes, before->live_sandboxes);
}

TEST_F(RetryTest, ExecRunIsNeverRepeated) {
  REQUIRE_FAKE_EXECD("the execd_down fault switch and the execd_requests count");
  const std::string params = JsonObject()
                                 .Str("sandbox_id", sandbox_)
                                 .Str("command", "echo ran >> ran-exec-run.txt")
                                 .str();
  const Outcome o = FirstAttemptFails("exec.run", params, kExecdFault, Listener::kExecd);
  ASSERT_NE(o.response, nullptr) << Describe(o);
  ASSERT_TRUE(o.response->IsError()) << "a command was sent again: " << Describe(o);
  EXPECT_EQ(o.requests.execd, 1) << Describe(o);
  MessagePtr stat = shim_->Request(
      "files.stat", JsonObject().Str("sandbox_id", sandbox_).Str("path", "/ran-exec-run.txt").str());
  ASSERT_NE(stat, nullptr);
  EXPECT_EQ(stat->EppCode(), "E8005") << "the command ran after all: " << stat->raw;
}

TEST_F(RetryTest, ExecStartIsNeverRepeated) {
  REQUIRE_FAKE_EXECD("the execd_down fault switch and the execd_requests count");
  const std::string params = JsonObject()
                                 .Str("sandbox_id", sandbox_)
                                 .Str("command", "echo ran >> ran-exec-start.txt")
                                 .str();
  const Outcome o = FirstAttemptFails("exec.start", params, kExecdFault, Listener::kExecd);
  ASSERT_NE(o.response, nullptr) << Describe(o);
  ASSERT_TRUE(o.response->IsError()) << "a command was sent again: " << Describe(o);
  EXPECT_EQ(o.requests.execd, 1) << Describe(o);
  EXPECT_TRUE(shim_->NotificationsByMethod("exec.output").empty());
  EXPECT_TRUE(shim_->NotificationsByMethod("exec.exit").empty());
  MessagePtr stat = shim_->Request(
      "files.stat",
      JsonObject().Str("sandbox_id", sandbox_).Str("path", "/ran-exec-start.txt").str());
  ASSERT_NE(stat, nullptr);
  EXPECT_EQ(stat->EppCode(), "E8005") << "the command ran after all: " << stat->raw;
}

TEST_F(RetryTest, FilesWriteIsNeverRepeated) {
  REQUIRE_FAKE_EXECD("the execd_down fault switch and the execd_requests count");
  // Before 1.0.19 a write of an existing file asks for it first (its owner), so the
  // upload is not the first request the fault can catch.
  REQUIRE_EXECD("1.0.19", "an upload as the first request of a write");
  const std::string params = JsonObject()
                                 .Str("sandbox_id", sandbox_)
                                 .Str("path", "/tmp/never-written.txt")
                                 .Str("data", "x")
                                 .str();
  // A first write lets the bridge learn the sandbox's execd release (bridge/core/files/files.h),
  // so the upload is the first request of the write under test.
  MessagePtr warm = shim_->Request(
      "files.write", JsonObject().Str("sandbox_id", sandbox_).Str("path", "/tmp/warm.txt").Str("data", "w").str());
  ASSERT_NE(warm, nullptr);
  ASSERT_FALSE(warm->IsError()) << warm->raw;
  const Outcome o = FirstAttemptFails("files.write", params, kExecdFault, Listener::kExecd);
  ASSERT_NE(o.response, nullptr) << Describe(o);
  ASSERT_TRUE(o.response->IsError()) << "an upload was sent again: " << Describe(o);
  EXPECT_EQ(o.requests.execd, 1) << Describe(o);
  MessagePtr stat = shim_->Request(
      "files.stat",
      JsonObject().Str("sandbox_id", sandbox_).Str("path", "/tmp/never-written.txt").str());
  ASSERT_NE(stat, nullptr);
  EXPECT_EQ(stat->EppCode(), "E8005") << "the file was written after all: " << stat->raw;
}

// upstream's server proxy sometimes answers its own 500 ("An internal error occurred in
// the proxy: illegal status line: …", having read an event stream still arriving on a
// reused connection as a status line): a read through it is sent again, a command is not.
TEST_F(RetryTest, TheServerProxysOwn500IsRetriedForReadsOnly) {
  EppSession* proxied = StartInitializedShim({{"ABX_OPENSANDBOX_USE_SERVER_PROXY", "true"}});
  ASSERT_NE(proxied, nullptr);
  MessagePtr written = proxied->Request(
      "files.write", JsonObject().Str("sandbox_id", sandbox_).Str("path", "/tmp/p.txt").Str("data", "abcd").str());
  ASSERT_NE(written, nullptr);
  ASSERT_FALSE(written->IsError()) << written->raw;

  ASSERT_TRUE(fake().SetFaults(R"({"proxy_internal_errors":1})"));
  MessagePtr stat = proxied->Request(
      "files.stat", JsonObject().Str("sandbox_id", sandbox_).Str("path", "/tmp/p.txt").str());
  ASSERT_NE(stat, nullptr);
  ASSERT_FALSE(stat->IsError()) << stat->raw;
  EXPECT_EQ(GetInt(stat->result(), "size", -1), 4) << stat->raw;

  ASSERT_TRUE(fake().SetFaults(R"({"proxy_internal_errors":1})"));
  const std::string marker = "/tmp/ran-" + std::to_string(getpid());
  MessagePtr run = proxied->Request(
      "exec.run", JsonObject().Str("sandbox_id", sandbox_).Str("command", "echo x >> " + marker).str());
  ASSERT_NE(run, nullptr);
  EXPECT_EQ(run->EppCode(), "E8010") << run->raw;
  EXPECT_NE(run->raw.find("An internal error occurred in the proxy"), std::string::npos) << run->raw;
  MessagePtr ran = proxied->Request(
      "files.stat", JsonObject().Str("sandbox_id", sandbox_).Str("path", marker).str());
  ASSERT_NE(ran, nullptr);
  EXPECT_EQ(ran->EppCode(), "E8005") << "the command was sent again: " << ran->raw;
}

}  // namespace
}  // namespace abx::e2e
