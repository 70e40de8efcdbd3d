// The daemon's warm pool end to end (docs/epp1.md §3, "sandbox.pool extension"), with the
// fake's containers taking a stated time to start (fault start_ms), so that a cold
// create is measurably slow: a pooled create answers in a fraction of it and runs a
// command; its metadata is exactly the call's; a call that cannot take one creates as
// before; a pooled sandbox the server killed is skipped; failing refills back off and
// show in provider.info and provider.doctor; an orderly stop kills the pool; a bridge
// killed outright leaves sandboxes the next bridge adopts.

#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "tests/e2e/harness.h"

namespace abx::e2e {
namespace {

constexpr int kStartMs = 1500;

class PoolTest : public TestEnv {
 protected:
  void SetUp() override {
    TestEnv::SetUp();
    if (IsSkipped() || HasFatalFailure()) return;
    REQUIRE_FAKE("its start delay and its sandboxes");
    ASSERT_TRUE(fake().SetFaults("{\"start_ms\":" + std::to_string(kStartMs) + "}"));
  }

  // A shim whose configuration names the pool.
  EppSession* PoolShim(const std::string& pool, const std::string& ttl = "1800") {
    return StartInitializedShim({{"ABX_OPENSANDBOX_POOL", pool}, {"ABX_OPENSANDBOX_POOL_TTL", ttl}});
  }
  // provider.info's pool.<template>.<field>.
  int64_t PoolField(EppSession* shim, const std::string& template_name, const std::string& field) {
    MessagePtr info = shim->Request("provider.info", "{}");
    return info && !info->IsError() ? GetInt(info->result(), "pool." + template_name + "." + field, -1) : -1;
  }
  bool WaitReady(EppSession* shim, const std::string& template_name, int64_t count, Millis within = Millis(30000)) {
    const auto deadline = Clock::now() + within;
    while (Clock::now() < deadline) {
      if (PoolField(shim, template_name, "ready") == count) return true;
      std::this_thread::sleep_for(Millis(100));
    }
    return false;
  }
  // The ids of the sandboxes the fake holds that carry the pool's label.
  std::vector<std::string> PooledOnServer(EppSession* shim) {
    std::vector<std::string> ids;
    MessagePtr listed = shim->Request("sandbox.list", R"({"state":["Running","Pending"]})");
    if (!listed || listed->IsError()) return ids;
    const rapidjson::Value& all = listed->result()["sandboxes"];
    for (const auto& s : all.GetArray()) {
      if (s["metadata"].IsObject() && s["metadata"].HasMember("abx-pool")) ids.push_back(s["id"].GetString());
    }
    return ids;
  }
  std::optional<int64_t> LiveSandboxes() {
    auto stats = fake().Stats();
    return stats ? std::optional<int64_t>(stats->live_sandboxes) : std::nullopt;
  }
};

TEST_F(PoolTest, APooledCreateAnswersInAFractionOfAColdOneAndIsTheCallsSandbox) {
  EppSession* shim = PoolShim("base=2");
  ASSERT_NE(shim, nullptr);
  ASSERT_TRUE(WaitReady(shim, "base", 2)) << PoolField(shim, "base", "ready");

  auto started = Clock::now();
  MessagePtr pooled = shim->Request("sandbox.create", R"({"template":"base","metadata":{"task":"t1"},"timeout":900})",
                                    Millis(30000));
  const auto pooled_ms = std::chrono::duration_cast<Millis>(Clock::now() - started).count();
  ASSERT_FALSE(pooled->IsError()) << pooled->raw;
  EXPECT_TRUE(pooled->result()["pooled"].IsTrue()) << pooled->raw;
  const std::string id = GetString(pooled->result(), "id");
  EXPECT_EQ(GetString(pooled->result(), "template"), "base");
  EXPECT_EQ(GetString(pooled->result(), "state"), "Running");

  // The same create with an env cannot take one: a cold create, the container's start.
  started = Clock::now();
  MessagePtr cold = shim->Request("sandbox.create", R"({"template":"base","env":{"A":"1"}})", Millis(30000));
  const auto cold_ms = std::chrono::duration_cast<Millis>(Clock::now() - started).count();
  ASSERT_FALSE(cold->IsError()) << cold->raw;
  EXPECT_FALSE(cold->result().HasMember("pooled")) << cold->raw;
  EXPECT_GE(cold_ms, kStartMs);
  // The pooled one did not wait for a start; how much faster it is, bench/ measures.
  EXPECT_LT(pooled_ms, kStartMs) << "pooled " << pooled_ms << " ms, cold " << cold_ms << " ms";

  // It runs a command, and its metadata is exactly the call's: no pool label.
  MessagePtr ran = shim->Request("exec.run", JsonObject().Str("sandbox_id", id).Str("command", "echo warm").str());
  ASSERT_FALSE(ran->IsError()) << ran->raw;
  EXPECT_EQ(GetString(ran->result(), "stdout"), "warm\n");
  MessagePtr got = shim->Request("sandbox.get", JsonObject().Str("sandbox_id", id).str());
  ASSERT_FALSE(got->IsError()) << got->raw;
  EXPECT_EQ(got->result()["metadata"].MemberCount(), 1u) << got->raw;
  EXPECT_EQ(GetString(got->result(), "metadata.task"), "t1") << got->raw;
  EXPECT_FALSE(got->result()["expires_at"].IsNull()) << got->raw;

  // It was replaced at once.
  EXPECT_TRUE(WaitReady(shim, "base", 2, Millis(kStartMs * 4)));
  EXPECT_EQ(PoolField(shim, "base", "taken"), 1);
}

TEST_F(PoolTest, ACancelDuringATakePutsTheSandboxBack) {
  EppSession* shim = PoolShim("base=1");
  ASSERT_NE(shim, nullptr);
  ASSERT_TRUE(WaitReady(shim, "base", 1));
  // Every lifecycle answer takes a second: the cancel comes while the take's metadata patch
  // is under way, then while its renewal is (the patch, then the GET of the renewal).
  for (const int cancel_after_ms : {300, 1300}) {
    SCOPED_TRACE("cancelled " + std::to_string(cancel_after_ms) + " ms into the take");
    const std::vector<std::string> pooled = PooledOnServer(shim);
    ASSERT_EQ(pooled.size(), 1u);
    MessagePtr before = shim->Request("sandbox.get", JsonObject().Str("sandbox_id", pooled[0]).str());
    ASSERT_FALSE(before->IsError()) << before->raw;
    ASSERT_TRUE(fake().SetFaults(R"({"latency_ms":1000})"));
    const int64_t create =
        shim->SendRequest("sandbox.create", R"({"template":"base","metadata":{"task":"c"},"timeout":120})");
    std::this_thread::sleep_for(Millis(cancel_after_ms));
    shim->Notify("$/cancel", "{\"id\":" + std::to_string(create) + "}");
    MessagePtr cancelled = shim->WaitResponse(create, Millis(30000));
    ASSERT_TRUE(fake().ClearFaults());
    ASSERT_NE(cancelled, nullptr);
    EXPECT_EQ(cancelled->EppCode(), "E8009") << cancelled->raw;
    EXPECT_EQ(PoolField(shim, "base", "taken"), 0);

    // The same sandbox is the pool's again: the pool's label, not the call's metadata,
    // and the pool's lifetime (30 minutes), not the call's two.
    MessagePtr after = shim->Request("sandbox.get", JsonObject().Str("sandbox_id", pooled[0]).str());
    ASSERT_FALSE(after->IsError()) << after->raw;
    EXPECT_EQ(after->result()["metadata"].MemberCount(), 1u) << after->raw;
    EXPECT_TRUE(after->result()["metadata"].HasMember("abx-pool")) << after->raw;
    EXPECT_GE(GetString(after->result(), "expires_at"), GetString(before->result(), "expires_at")) << after->raw;
    // The replacement the take started arrives and goes again: one ready, one on the server.
    for (int i = 0; i < 100 && PoolField(shim, "base", "creating") != 0; ++i) std::this_thread::sleep_for(Millis(100));
    EXPECT_EQ(PoolField(shim, "base", "creating"), 0);
    EXPECT_EQ(PoolField(shim, "base", "ready"), 1);
    size_t labelled = 0;
    for (int i = 0; i < 100 && (labelled = PooledOnServer(shim).size()) != 1; ++i) {
      std::this_thread::sleep_for(Millis(100));
    }
    EXPECT_EQ(labelled, 1u) << "the pool's sandboxes on the server are not the one it holds";
    EXPECT_EQ(PooledOnServer(shim), pooled);
  }
  // The next create takes it.
  const std::vector<std::string> pooled = PooledOnServer(shim);
  MessagePtr next = shim->Request("sandbox.create", R"({"template":"base"})", Millis(30000));
  ASSERT_FALSE(next->IsError()) << next->raw;
  EXPECT_TRUE(next->result()["pooled"].IsTrue()) << next->raw;
  ASSERT_EQ(pooled.size(), 1u);
  EXPECT_EQ(GetString(next->result(), "id"), pooled[0]);
}

TEST_F(PoolTest, ACallThatCannotTakeOneCreatesAsBefore) {
  EppSession* shim = PoolShim("base=1");
  ASSERT_NE(shim, nullptr);
  ASSERT_TRUE(WaitReady(shim, "base", 1));
  const char* cases[] = {
      R"({"template":"base","env":{"A":"1"}})",
      R"({"template":"base","resources":{"cpu":"2"}})",
      R"({"template":"base","entrypoint":["sleep","infinity"]})",
      R"({"template":"base","timeout":0})",
      R"({"template":"base","provider_options":{"volumes":[{"name":"v","mount_path":"/v","pvc":{"claim_name":"c"}}]}})",
      R"({"template":"base","provider_options":{"default_image":"python:3.11"}})",
      R"({"template":"python:3.11"})",
  };
  for (const char* params : cases) {
    MessagePtr created = shim->Request("sandbox.create", params, Millis(30000));
    ASSERT_FALSE(created->IsError()) << params << " -> " << created->raw;
    EXPECT_FALSE(created->result().HasMember("pooled")) << params;
  }
  EXPECT_EQ(PoolField(shim, "base", "taken"), 0);
  EXPECT_EQ(PoolField(shim, "base", "ready"), 1);
  // Metadata the server's label rules refuse: the answer is a normal create's, and no
  // pooled sandbox is spent on it (none killed, none being replaced).
  MessagePtr refused = shim->Request("sandbox.create", R"({"template":"base","metadata":{"no spaces":"x"}})",
                                     Millis(30000));
  ASSERT_NE(refused, nullptr);
  EXPECT_FALSE(refused->IsError() ? false : refused->result().HasMember("pooled")) << refused->raw;
  EXPECT_EQ(PoolField(shim, "base", "ready"), 1);
  EXPECT_EQ(PoolField(shim, "base", "creating"), 0);
  // ready_timeout is the one provider option a pooled create may carry.
  MessagePtr pooled = shim->Request("sandbox.create", R"({"provider_options":{"ready_timeout":30}})", Millis(30000));
  ASSERT_FALSE(pooled->IsError()) << pooled->raw;
  EXPECT_TRUE(pooled->result()["pooled"].IsTrue()) << pooled->raw;
}

TEST_F(PoolTest, APooledSandboxTheServerKilledIsSkipped) {
  EppSession* shim = PoolShim("base=1");
  ASSERT_NE(shim, nullptr);
  ASSERT_TRUE(WaitReady(shim, "base", 1));
  const std::vector<std::string> pooled = PooledOnServer(shim);
  ASSERT_EQ(pooled.size(), 1u);
  // Killed behind the bridge's back, as an operator or the server's own expiry would.
  ASSERT_EQ(fake().Http("DELETE", "/v1/sandboxes/" + pooled[0]).status, 204);
  MessagePtr created = shim->Request("sandbox.create", R"({"template":"base"})", Millis(30000));
  ASSERT_FALSE(created->IsError()) << created->raw;
  EXPECT_NE(GetString(created->result(), "id"), pooled[0]);
  EXPECT_FALSE(created->result().HasMember("pooled")) << created->raw;
  MessagePtr ran = shim->Request(
      "exec.run", JsonObject().Str("sandbox_id", GetString(created->result(), "id")).Str("command", "true").str());
  EXPECT_FALSE(ran->IsError()) << ran->raw;
}

TEST_F(PoolTest, FailingRefillsBackOffShowInInfoAndDoctorAndRecover) {
  ASSERT_TRUE(fake().SetFaults(R"({"start_ms":200,"refuse_creates":true})"));
  EppSession* shim = PoolShim("base=2");
  ASSERT_NE(shim, nullptr);
  std::string last_error;
  for (int i = 0; i < 100 && last_error.empty(); ++i) {
    MessagePtr info = shim->Request("provider.info", "{}");
    last_error = GetString(info->result(), "pool.base.last_error");
    std::this_thread::sleep_for(Millis(50));
  }
  EXPECT_NE(last_error.find("quota exceeded"), std::string::npos) << last_error;
  MessagePtr doctor = shim->Request("provider.doctor", "{}");
  ASSERT_FALSE(doctor->IsError()) << doctor->raw;
  EXPECT_FALSE(doctor->result()["ok"].GetBool()) << doctor->raw;
  EXPECT_NE(doctor->raw.find("refills failing"), std::string::npos) << doctor->raw;
  // `abx-opensandbox-bridge status` shows the pool and its failing refill too.
  std::string status_output;
  auto status = RunCommand({BridgeBinary(), "status", "--socket", socket_path()}, ShimEnv(), Millis(10000),
                           &status_output);
  ASSERT_TRUE(status.has_value()) << status_output;
  EXPECT_NE(status_output.find(R"("pools":[{"template":"base")"), std::string::npos) << status_output;
  EXPECT_NE(status_output.find("quota exceeded"), std::string::npos) << status_output;
  EXPECT_EQ(status_output.find(kApiKey), std::string::npos) << status_output;
  // Backing off: in 2.5 s from the first failure, at most a few attempts (1 s, 2 s, …).
  auto before = fake().Stats();
  std::this_thread::sleep_for(Millis(2500));
  auto after = fake().Stats();
  ASSERT_TRUE(before && after);
  EXPECT_LE(after->requests - before->requests, 30) << "refills retried without backing off";

  // The server takes creates again: the pool fills, and a create is pooled.
  ASSERT_TRUE(fake().SetFaults(R"({"start_ms":200,"refuse_creates":false})"));
  ASSERT_TRUE(WaitReady(shim, "base", 2, Millis(20000)));
  EXPECT_EQ(GetString(shim->Request("provider.info", "{}")->result(), "pool.base.last_error"), "");
  MessagePtr pooled = shim->Request("sandbox.create", "{}", Millis(30000));
  ASSERT_FALSE(pooled->IsError()) << pooled->raw;
  EXPECT_TRUE(pooled->result()["pooled"].IsTrue()) << pooled->raw;
}

TEST_F(PoolTest, AnOrderlyStopKillsThePoolAndAKilledBridgesPoolIsAdoptedByTheNext) {
  EppSession* shim = PoolShim("base=2");
  ASSERT_NE(shim, nullptr);
  ASSERT_TRUE(WaitReady(shim, "base", 2));
  std::vector<std::string> first = PooledOnServer(shim);
  ASSERT_EQ(first.size(), 2u);

  // SIGKILL: nothing is killed; the next bridge of this build adopts them first.
  auto pid = BridgePid();
  ASSERT_TRUE(pid.has_value());
  ASSERT_EQ(::kill(*pid, SIGKILL), 0);
  std::this_thread::sleep_for(Millis(300));
  EppSession* next = PoolShim("base=2");
  ASSERT_NE(next, nullptr);
  ASSERT_TRUE(WaitReady(next, "base", 2, Millis(10000)));
  std::vector<std::string> adopted = PooledOnServer(next);
  std::sort(first.begin(), first.end());
  std::sort(adopted.begin(), adopted.end());
  EXPECT_EQ(adopted, first) << "the next bridge made new ones instead of adopting";
  EXPECT_EQ(PoolField(next, "base", "creating"), 0);

  // An orderly stop kills them.
  StopBridge();
  auto live = LiveSandboxes();
  ASSERT_TRUE(live.has_value());
  EXPECT_EQ(*live, 0);
}

// The key is hashed with the user's salt beside the socket: a bridge that finds no salt
// makes a new one, and with it a key of its own, so it adopts nothing.
TEST_F(PoolTest, TheKeyHoldsTheUsersSaltKeptPrivateBesideTheSocket) {
  ASSERT_TRUE(fake().SetFaults(R"({"start_ms":0})"));
  EppSession* shim = PoolShim("base=1");
  ASSERT_NE(shim, nullptr);
  ASSERT_TRUE(WaitReady(shim, "base", 1));
  const std::vector<std::string> first = PooledOnServer(shim);
  ASSERT_EQ(first.size(), 1u);
  const std::string salt = socket_dir() + "/pool-salt";
  struct stat st;
  ASSERT_EQ(::stat(salt.c_str(), &st), 0) << salt;
  EXPECT_EQ(st.st_mode & 0777, 0600u);

  auto pid = BridgePid();
  ASSERT_TRUE(pid.has_value());
  ASSERT_EQ(::kill(*pid, SIGKILL), 0);
  std::this_thread::sleep_for(Millis(300));
  ASSERT_EQ(::unlink(salt.c_str()), 0);
  EppSession* next = PoolShim("base=1");
  ASSERT_NE(next, nullptr);
  ASSERT_TRUE(WaitReady(next, "base", 1));
  std::vector<std::string> now = PooledOnServer(next);
  EXPECT_EQ(now.size(), 2u) << "the earlier sandbox was adopted under a new salt";
  EXPECT_NE(std::find(now.begin(), now.end(), first[0]), now.end()) << "the earlier one is left to expire";
  // Labels differ: the same build, server, key and template under two salts.
  std::set<std::string> labels;
  MessagePtr listed = next->Request("sandbox.list", R"({"state":["Running"]})");
  ASSERT_NE(listed, nullptr);
  for (const auto& s : listed->result()["sandboxes"].GetArray()) {
    if (s["metadata"].IsObject() && s["metadata"].HasMember("abx-pool")) {
      labels.insert(s["metadata"]["abx-pool"].GetString());
    }
  }
  EXPECT_EQ(labels.size(), 2u);
  MessagePtr killed = next->Request("sandbox.kill", JsonObject().Str("sandbox_id", first[0]).str());
  EXPECT_FALSE(killed->IsError()) << killed->raw;
}

TEST_F(PoolTest, ThirtyTwoCreatesAtOnceFromAPoolOfFour) {
  EppSession* first = PoolShim("base=4");
  ASSERT_NE(first, nullptr);
  ASSERT_TRUE(WaitReady(first, "base", 4));
  // Refills take longer than the burst, so exactly the four ready ones are handed out.
  ASSERT_TRUE(fake().SetFaults(R"({"start_ms":4000})"));
  std::vector<EppSession*> shims;
  for (int i = 0; i < 32; ++i) {
    EppSession* s = PoolShim("base=4");
    ASSERT_NE(s, nullptr);
    shims.push_back(s);
  }
  std::vector<int64_t> ids;
  for (EppSession* s : shims) ids.push_back(s->SendRequest("sandbox.create", R"({"template":"base"})"));
  std::set<std::string> distinct;
  int pooled = 0, errors = 0;
  for (size_t i = 0; i < shims.size(); ++i) {
    MessagePtr created = shims[i]->WaitResponse(ids[i], Millis(60000));
    if (!created || created->IsError()) {
      ++errors;
      continue;
    }
    distinct.insert(GetString(created->result(), "id"));
    if (created->result().HasMember("pooled")) ++pooled;
  }
  EXPECT_EQ(errors, 0);
  EXPECT_EQ(distinct.size(), 32u);
  EXPECT_EQ(pooled, 4);
}

// pool_ttl at the server's minimum (60 s): the bridge renews its pooled sandboxes every
// third of it while it runs; killed outright, it leaves them to expire within pool_ttl.
TEST_F(PoolTest, PooledSandboxesAreRenewedWhileTheBridgeRunsAndExpireAfterItIsKilled) {
  ASSERT_TRUE(fake().SetFaults(R"({"start_ms":0})"));
  EppSession* shim = PoolShim("base=1", "60");
  ASSERT_NE(shim, nullptr);
  ASSERT_TRUE(WaitReady(shim, "base", 1));
  const std::vector<std::string> pooled = PooledOnServer(shim);
  ASSERT_EQ(pooled.size(), 1u);
  auto expiry = [&] {
    MessagePtr got = shim->Request("sandbox.get", JsonObject().Str("sandbox_id", pooled[0]).str());
    return got && !got->IsError() ? GetString(got->result(), "expires_at") : "";
  };
  const std::string first = expiry();
  ASSERT_FALSE(first.empty());
  // A renewal comes within 20 s (a third of pool_ttl) and moves the expiry on.
  std::string later = first;
  const auto deadline = Clock::now() + Millis(30000);
  while (Clock::now() < deadline && later == first) {
    std::this_thread::sleep_for(Millis(1000));
    later = expiry();
  }
  EXPECT_GT(later, first) << "never renewed";

  // SIGKILL: nobody renews any more, and the server's expiry ends it within pool_ttl.
  auto pid = BridgePid();
  ASSERT_TRUE(pid.has_value());
  ASSERT_EQ(::kill(*pid, SIGKILL), 0);
  const auto gone_by = Clock::now() + Millis(70000);
  std::optional<int64_t> live = LiveSandboxes();
  while (Clock::now() < gone_by && live.value_or(-1) != 0) {
    std::this_thread::sleep_for(Millis(1000));
    live = LiveSandboxes();
  }
  EXPECT_EQ(live.value_or(-1), 0) << "the pooled sandbox outlived its bridge by more than pool_ttl";
}

// The next session's configuration is the pool's: a lowered count kills the surplus, a
// session without `pool` turns it off (docs/epp1.md §3).
TEST_F(PoolTest, AChangedPoolTakesEffectWithTheNextSession) {
  ASSERT_TRUE(fake().SetFaults(R"({"start_ms":0})"));
  EppSession* first = PoolShim("base=3");
  ASSERT_NE(first, nullptr);
  ASSERT_TRUE(WaitReady(first, "base", 3));
  EXPECT_EQ(PooledOnServer(first).size(), 3u);
  EppSession* lowered = PoolShim("base=1");
  ASSERT_NE(lowered, nullptr);
  ASSERT_TRUE(WaitReady(lowered, "base", 1));
  const auto deadline = Clock::now() + Millis(10000);
  while (Clock::now() < deadline && PooledOnServer(lowered).size() != 1) std::this_thread::sleep_for(Millis(100));
  EXPECT_EQ(PooledOnServer(lowered).size(), 1u);
  EppSession* without = StartInitializedShim();
  ASSERT_NE(without, nullptr);
  MessagePtr info = without->Request("provider.info", "{}");
  EXPECT_EQ(info->result()["pool"].MemberCount(), 0u) << info->raw;
  const auto gone_by = Clock::now() + Millis(10000);
  while (Clock::now() < gone_by && !PooledOnServer(without).empty()) std::this_thread::sleep_for(Millis(100));
  EXPECT_TRUE(PooledOnServer(without).empty());
}

}  // namespace
}  // namespace abx::e2e
