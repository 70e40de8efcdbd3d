// The rest of the method table end to end (docs/epp1.md §3, docs/mapping.md):
// exec options (env, cwd, stdin, user), detached commands and exec.logs, process.*,
// list paging and filters, set_timeout on the server's clock, pause/resume,
// use_server_proxy, ports.url, the read cap, modes, E8008 writes, error mapping,
// configuration from ~/.abx/config.toml, sandbox.metrics, provider.doctor.

#include <chrono>
#include <cstdlib>
#include <ctime>
#include <fstream>
#include <string>
#include <thread>

#include <gtest/gtest.h>

#include "tests/e2e/harness.h"

namespace abx::e2e {
namespace {

using std::chrono::milliseconds;

int64_t ParseRfc3339Seconds(const std::string& t) {
  std::tm tm{};
  if (!strptime(t.c_str(), "%Y-%m-%dT%H:%M:%S", &tm)) return 0;
  return timegm(&tm);
}

class ProviderTest : public TestEnv {
 protected:
  MessagePtr Call(EppSession* shim, const std::string& method, const std::string& params,
                  Millis timeout = Millis(20000)) {
    MessagePtr response = shim->Request(method, params, timeout);
    if (!response) ADD_FAILURE() << "no answer to " << method << " " << Abbreviate(params, 300);
    return response;
  }
  // The result of a call that must succeed.
  MessagePtr Ok(EppSession* shim, const std::string& method, const std::string& params,
                Millis timeout = Millis(20000)) {
    MessagePtr r = Call(shim, method, params, timeout);
    if (r && r->IsError()) ADD_FAILURE() << method << " failed: " << r->raw;
    return r;
  }
};

TEST_F(ProviderTest, ExecOptionsEnvCwdStdinUser) {
  EppSession* shim = StartInitializedShim();
  ASSERT_NE(shim, nullptr);
  const std::string id = CreateSandbox(shim);
  ASSERT_FALSE(id.empty());
  ASSERT_NE(Ok(shim, "files.mkdir", JsonObject().Str("sandbox_id", id).Str("path", "/work/sub").str()),
            nullptr);

  MessagePtr r = Ok(shim, "exec.run",
                    JsonObject().Str("sandbox_id", id).Str("command", "echo \"$GREETING\"; pwd")
                        .Raw("env", R"({"GREETING":"hé llo"})").Str("cwd", "/work/sub").str());
  ASSERT_NE(r, nullptr);
  EXPECT_EQ(GetString(r->result(), "stdout"), "hé llo\n/work/sub\n");

  // stdin: execd has none; the data must still reach the command byte for byte.
  const std::string input = "line one\n\nthird 'quoted' $HOME\n";
  r = Ok(shim, "exec.run",
         JsonObject().Str("sandbox_id", id).Raw("argv", R"(["cat"])").Str("stdin", input).str());
  ASSERT_NE(r, nullptr);
  // execd before 1.0.17 drops blank output lines (README, "Output as execd reports it").
  EXPECT_EQ(GetString(r->result(), "stdout"),
            ExecdProfileAtLeast("1.0.17") ? input : "line one\nthird 'quoted' $HOME\n");
  // ... and the file it travelled in is gone afterwards.
  r = Ok(shim, "exec.run",
         JsonObject().Str("sandbox_id", id).Str("command", "ls -a /tmp | grep -c abx-stdin || true").str());
  ASSERT_NE(r, nullptr);
  EXPECT_EQ(GetString(r->result(), "stdout"), "0\n");

  // user by name, resolved to uid/gid inside the sandbox.
  r = Ok(shim, "exec.run",
         JsonObject().Str("sandbox_id", id).Str("command", "id -u; id -g").Str("user", "nobody").str());
  ASSERT_NE(r, nullptr);
  EXPECT_EQ(GetString(r->result(), "stdout"), "65534\n65534\n");
  r = Call(shim, "exec.run",
           JsonObject().Str("sandbox_id", id).Str("command", "true").Str("user", "no-such-user-x").str());
  ASSERT_NE(r, nullptr);
  EXPECT_EQ(r->ErrorCode(), -32602) << r->raw;
}

TEST_F(ProviderTest, DetachedCommandsAndExecLogs) {
  EppSession* shim = StartInitializedShim();
  ASSERT_NE(shim, nullptr);
  const std::string id = CreateSandbox(shim);
  ASSERT_FALSE(id.empty());
  MessagePtr r = Ok(shim, "exec.start",
                    JsonObject().Str("sandbox_id", id)
                        .Str("command", "for i in 1 2 3; do echo $i; sleep 0.2; done; exit 4")
                        .Bool("detached", true).str());
  ASSERT_NE(r, nullptr);
  const std::string exec_id = GetString(r->result(), "exec_id");
  ASSERT_FALSE(exec_id.empty());
  std::string data;
  int64_t cursor = 0;
  bool running = true;
  MessagePtr last;
  for (int i = 0; i < 100 && running; ++i) {
    last = Ok(shim, "exec.logs",
              JsonObject().Str("sandbox_id", id).Str("exec_id", exec_id).Int("cursor", cursor).str());
    ASSERT_NE(last, nullptr);
    data += GetString(last->result(), "data");
    cursor = GetInt(last->result(), "cursor");
    running = GetBool(last->result(), "running");
    if (running) std::this_thread::sleep_for(milliseconds(100));
  }
  EXPECT_FALSE(running);
  EXPECT_EQ(data, "1\n2\n3\n");
  EXPECT_EQ(GetInt(last->result(), "exit_code", -99), 4);
  // A detached command gets no notifications.
  EXPECT_TRUE(shim->Notifications(exec_id).empty());
}

TEST_F(ProviderTest, ProcessListKillAndSignal) {
  EppSession* shim = StartInitializedShim();
  ASSERT_NE(shim, nullptr);
  const std::string id = CreateSandbox(shim);
  ASSERT_FALSE(id.empty());
  const std::string marker = "sleep 41." + std::to_string(getpid());
  MessagePtr r = Ok(shim, "exec.start",
                    JsonObject().Str("sandbox_id", id).Str("command", marker).Bool("detached", true).str());
  ASSERT_NE(r, nullptr);
  const std::string exec_id = GetString(r->result(), "exec_id");

  bool listed = false;
  for (int i = 0; i < 30 && !listed; ++i) {
    MessagePtr list = Ok(shim, "process.list", JsonObject().Str("sandbox_id", id).str(), Millis(30000));
    ASSERT_NE(list, nullptr);
    const rapidjson::Value* processes = Find(list->result(), "processes");
    ASSERT_NE(processes, nullptr);
    for (const auto& p : processes->GetArray()) {
      if (GetString(p, "command").find(marker) != std::string::npos &&
          GetString(p, "exec_id") == exec_id) {
        listed = true;
      }
    }
    if (!listed) std::this_thread::sleep_for(milliseconds(100));
  }
  EXPECT_TRUE(listed) << "the detached command is not listed with its exec_id";

  // An exec_id takes only SIGKILL.
  r = Call(shim, "process.signal",
           JsonObject().Str("sandbox_id", id).Str("exec_id", exec_id).Str("signal", "SIGTERM").str());
  ASSERT_NE(r, nullptr);
  EXPECT_EQ(r->EppCode(), "E8004");
  r = Ok(shim, "process.kill", JsonObject().Str("sandbox_id", id).Str("exec_id", exec_id).str());
  ASSERT_NE(r, nullptr);
  EXPECT_TRUE(GetBool(r->result(), "killed")) << r->raw;
  r = Ok(shim, "process.kill", JsonObject().Str("sandbox_id", id).Str("exec_id", exec_id).str());
  ASSERT_NE(r, nullptr);
  EXPECT_FALSE(GetBool(r->result(), "killed")) << r->raw;
  // process.stdin names its command (tests/e2e/stdin_test.cc has the rest).
  r = Call(shim, "process.stdin", JsonObject().Str("sandbox_id", id).str());
  ASSERT_NE(r, nullptr);
  EXPECT_EQ(r->ErrorCode(), -32602) << r->raw;
}

TEST_F(ProviderTest, ListFollowsPagesAndFilters) {
  EppSession* shim = StartInitializedShim();
  ASSERT_NE(shim, nullptr);
  // Every sandbox is labelled with this run: a live server holds other sandboxes too.
  const std::string run = "e2e-" + std::to_string(getpid()) + "-" + std::to_string(time(nullptr));
  auto labels = [&](const std::string& team) {
    return JsonObject().Str("run", run).Str("team", team).str();
  };
  for (int i = 0; i < 3; ++i) {
    ASSERT_FALSE(
        CreateSandbox(shim, JsonObject().Str("template", "base").Raw("metadata", labels("e2e")).str())
            .empty());
  }
  ASSERT_FALSE(
      CreateSandbox(shim, JsonObject().Str("template", "base").Raw("metadata", labels("other")).str())
          .empty());

  MessagePtr r = Ok(shim, "sandbox.list", JsonObject().Int("limit", 2).Raw("metadata", labels("e2e")).str());
  ASSERT_NE(r, nullptr);
  EXPECT_EQ(Find(r->result(), "sandboxes")->Size(), 2u);
  const std::string cursor = GetString(r->result(), "next_cursor");
  ASSERT_FALSE(cursor.empty()) << r->raw;
  r = Ok(shim, "sandbox.list",
         JsonObject().Int("limit", 2).Str("cursor", cursor).Raw("metadata", labels("e2e")).str());
  ASSERT_NE(r, nullptr);
  EXPECT_EQ(Find(r->result(), "sandboxes")->Size(), 1u);
  EXPECT_TRUE(IsNull(r->result(), "next_cursor")) << r->raw;

  const std::string this_run = JsonObject().Str("run", run).str();
  r = Ok(shim, "sandbox.list", JsonObject().Raw("state", R"(["running"])").Raw("metadata", this_run).str());
  ASSERT_NE(r, nullptr);
  EXPECT_EQ(Find(r->result(), "sandboxes")->Size(), 4u);
  r = Ok(shim, "sandbox.list", JsonObject().Raw("state", R"(["Paused"])").Raw("metadata", this_run).str());
  ASSERT_NE(r, nullptr);
  EXPECT_EQ(Find(r->result(), "sandboxes")->Size(), 0u);
}

TEST_F(ProviderTest, PauseResumeAndConnect) {
  EppSession* shim = StartInitializedShim();
  ASSERT_NE(shim, nullptr);
  const std::string id = CreateSandbox(shim);
  ASSERT_FALSE(id.empty());
  MessagePtr r = Call(shim, "sandbox.pause", JsonObject().Str("sandbox_id", id).str());
  ASSERT_NE(r, nullptr);
  if (live() && r->EppCode() == "E8007") GTEST_SKIP() << "the live runtime cannot pause: " << r->raw;
  ASSERT_FALSE(r->IsError()) << r->raw;
  EXPECT_EQ(GetString(r->result(), "state"), "Paused");
  r = Call(shim, "sandbox.pause", JsonObject().Str("sandbox_id", id).str());
  ASSERT_NE(r, nullptr);
  EXPECT_TRUE(r->IsError());  // already paused: the server refuses
  r = Ok(shim, "sandbox.resume", JsonObject().Str("sandbox_id", id).str());
  ASSERT_NE(r, nullptr);
  EXPECT_EQ(GetString(r->result(), "state"), "Running");
  r = Ok(shim, "exec.run", JsonObject().Str("sandbox_id", id).Str("command", "echo back").str());
  ASSERT_NE(r, nullptr);
  EXPECT_EQ(GetString(r->result(), "stdout"), "back\n");
  r = Ok(shim, "sandbox.connect", JsonObject().Str("sandbox_id", id).str());
  ASSERT_NE(r, nullptr);
  EXPECT_EQ(GetString(r->result(), "id"), id);
  r = Call(shim, "sandbox.connect", JsonObject().Str("sandbox_id", "00000000-0000-4000-8000-000000000000").str());
  ASSERT_NE(r, nullptr);
  EXPECT_EQ(r->EppCode(), "E8005");
}

class SkewedClockTest : public ProviderTest {
 protected:
  std::vector<std::string> FakeFlags() const override {
    auto flags = TestEnv::FakeFlags();
    flags.push_back("--clock-skew");
    flags.push_back("7200");
    return flags;
  }
};

TEST_F(SkewedClockTest, SetTimeoutUsesTheServersClockAndClampsTo60s) {
  REQUIRE_FAKE("a server clock skewed by a known amount (--clock-skew)");
  EppSession* shim = StartInitializedShim();
  ASSERT_NE(shim, nullptr);
  const std::string id = CreateSandbox(shim);
  ASSERT_FALSE(id.empty());
  MessagePtr r = Ok(shim, "sandbox.set_timeout", JsonObject().Str("sandbox_id", id).Int("timeout", 5).str());
  ASSERT_NE(r, nullptr);
  const int64_t expires = ParseRfc3339Seconds(GetString(r->result(), "expires_at"));
  const int64_t server_now = time(nullptr) + 7200;
  EXPECT_NEAR(static_cast<double>(expires - server_now), 60.0, 15.0) << r->raw;
  r = Ok(shim, "sandbox.set_timeout", JsonObject().Str("sandbox_id", id).Int("timeout", 3600).str());
  ASSERT_NE(r, nullptr);
  EXPECT_NEAR(static_cast<double>(ParseRfc3339Seconds(GetString(r->result(), "expires_at")) - server_now),
              3600.0, 15.0);
}

TEST_F(ProviderTest, ServerProxyCarriesExecFilesAndPorts) {
  EppSession* shim = StartInitializedShim({{"ABX_OPENSANDBOX_USE_SERVER_PROXY", "true"}});
  ASSERT_NE(shim, nullptr);
  const std::string id = CreateSandbox(shim);
  ASSERT_FALSE(id.empty());
  // Only the fake counts the connections its proxy route opens.
  const auto before = live() ? std::nullopt : fake().Stats();
  MessagePtr r = Ok(shim, "exec.run", JsonObject().Str("sandbox_id", id).Str("command", "echo via-proxy").str());
  ASSERT_NE(r, nullptr);
  EXPECT_EQ(GetString(r->result(), "stdout"), "via-proxy\n");
  ASSERT_NE(Ok(shim, "files.write", JsonObject().Str("sandbox_id", id).Str("path", "/p.txt").Str("data", "px").str()),
            nullptr);
  r = Ok(shim, "files.read", JsonObject().Str("sandbox_id", id).Str("path", "/p.txt").str());
  ASSERT_NE(r, nullptr);
  EXPECT_EQ(GetString(r->result(), "data"), "px");
  if (!live()) {
    const auto after = fake().Stats();
    ASSERT_TRUE(before && after);
    EXPECT_GT(after->server_proxy_upstream_connections, before->server_proxy_upstream_connections)
        << "the traffic did not go through the server's proxy route";
  }
  r = Ok(shim, "ports.url", JsonObject().Str("sandbox_id", id).Int("port", 8080).str());
  ASSERT_NE(r, nullptr);
  EXPECT_NE(GetString(r->result(), "url").find("/sandboxes/" + id + "/proxy/8080"), std::string::npos) << r->raw;
}

TEST_F(ProviderTest, DirectPortsUrl) {
  EppSession* shim = StartInitializedShim();
  ASSERT_NE(shim, nullptr);
  const std::string id = CreateSandbox(shim);
  ASSERT_FALSE(id.empty());
  MessagePtr r = Ok(shim, "ports.url", JsonObject().Str("sandbox_id", id).Int("port", 3000).str());
  ASSERT_NE(r, nullptr);
  const std::string url = GetString(r->result(), "url");
  // The fake's endpoints are on loopback; a live server's are wherever it says.
  EXPECT_EQ(url.rfind(live() ? "http" : "http://127.0.0.1:", 0), 0u) << url;
  EXPECT_EQ(url.find("/sandboxes/"), std::string::npos) << url;
  r = Call(shim, "ports.url", JsonObject().Str("sandbox_id", id).Int("port", 70000).str());
  ASSERT_NE(r, nullptr);
  EXPECT_EQ(r->ErrorCode(), -32602);
}

TEST_F(ProviderTest, ReadCapModesAndOversizedWrites) {
  EppSession* shim = StartInitializedShim();
  ASSERT_NE(shim, nullptr);
  const std::string id = CreateSandbox(shim);
  ASSERT_FALSE(id.empty());
  // 5 MiB of text: a read without length returns the 4 MiB cap and eof false.
  const std::string big(5 << 20, 'x');
  ASSERT_NE(Ok(shim, "files.write",
               JsonObject().Str("sandbox_id", id).Str("path", "/big.txt").Str("data", big).str(), Millis(60000)),
            nullptr);
  MessagePtr r = Ok(shim, "files.read", JsonObject().Str("sandbox_id", id).Str("path", "/big.txt").str(), Millis(60000));
  ASSERT_NE(r, nullptr);
  EXPECT_EQ(GetString(r->result(), "data").size(), 4u << 20);
  EXPECT_EQ(GetInt(r->result(), "size"), 5 << 20);
  EXPECT_FALSE(GetBool(r->result(), "eof"));
  r = Ok(shim, "files.read",
         JsonObject().Str("sandbox_id", id).Str("path", "/big.txt").Int("offset", 4 << 20).Int("length", 99 << 20).str());
  ASSERT_NE(r, nullptr);
  EXPECT_EQ(GetString(r->result(), "data").size(), 1u << 20);
  EXPECT_TRUE(GetBool(r->result(), "eof"));

  // mode on write.
  ASSERT_NE(Ok(shim, "files.write",
               JsonObject().Str("sandbox_id", id).Str("path", "/secret.txt").Str("data", "s").Str("mode", "0600").str()),
            nullptr);
  r = Ok(shim, "files.stat", JsonObject().Str("sandbox_id", id).Str("path", "/secret.txt").str());
  ASSERT_NE(r, nullptr);
  EXPECT_EQ(GetString(r->result(), "mode"), "0600");

  // A write larger than a line allows: E8008, and nothing partial left behind.
  const int64_t id_big = 990001;
  shim->Send("{\"jsonrpc\":\"2.0\",\"id\":" + std::to_string(id_big) +
             ",\"method\":\"files.write\",\"params\":{\"sandbox_id\":\"" + id +
             "\",\"path\":\"/too-big.txt\",\"data\":\"" + std::string((8 << 20) + 10, 'y') + "\"}}");
  r = shim->WaitResponse(id_big, Millis(30000));
  ASSERT_NE(r, nullptr);
  EXPECT_EQ(r->EppCode(), "E8008") << Abbreviate(r->raw, 300);
  r = Call(shim, "files.stat", JsonObject().Str("sandbox_id", id).Str("path", "/too-big.txt").str());
  ASSERT_NE(r, nullptr);
  EXPECT_EQ(r->EppCode(), "E8005");
}

TEST_F(ProviderTest, UnreachableServerIsE8002) {
  EppSession* shim = StartInitializedShim({{"ABX_OPENSANDBOX_BASE_URL", "http://127.0.0.1:1"}});
  ASSERT_NE(shim, nullptr);
  MessagePtr r = Call(shim, "sandbox.get", JsonObject().Str("sandbox_id", "x").str());
  ASSERT_NE(r, nullptr);
  EXPECT_EQ(r->EppCode(), "E8002") << r->raw;
}

TEST_F(ProviderTest, MalformedConfigIsRefusedAtInitializeNamingTheField) {
  REQUIRE_FAKE("counting the requests that reach the server (/_fake/stats)");
  EppSession* shim = StartShim({{"ABX_OPENSANDBOX_READY_TIMEOUT", "abc"}});
  ASSERT_NE(shim, nullptr);
  std::optional<int64_t> upstream;
  MessagePtr r;
  upstream = UpstreamRequestsDuring([&] { r = shim->Initialize(); });
  ASSERT_NE(r, nullptr);
  EXPECT_EQ(r->ErrorCode(), -32602) << r->raw;
  EXPECT_EQ(GetString(r->error(), "data.field"), "ready_timeout") << r->raw;
  ASSERT_TRUE(upstream.has_value());
  EXPECT_EQ(*upstream, 0);
}

TEST_F(ProviderTest, ConfigFileIsReadAndTheEnvironmentWins) {
  {
    std::ofstream toml(home_dir() + "/.abx/config.toml");
    if (!toml) {
      std::system(("mkdir -p " + home_dir() + "/.abx").c_str());
      toml.open(home_dir() + "/.abx/config.toml");
    }
    toml << "[providers.opensandbox]\n"
         << "base_url = \"" << base_url() << "/v1\"\n"
         << "api_key = \"" << api_key() << "\"\n"
         << "default_image = \"from-file:1\"\n"
         << "image_aliases = { py = \"python:3.12\" }\n";
  }
  EppSession* shim = StartInitializedShim({{"ABX_OPENSANDBOX_BASE_URL", std::nullopt},
                                           {"ABX_OPENSANDBOX_API_KEY", std::nullopt},
                                           {"ABX_OPENSANDBOX_DEFAULT_IMAGE", "from-env:2"}});
  ASSERT_NE(shim, nullptr);
  MessagePtr r = Ok(shim, "provider.info", "{}");
  ASSERT_NE(r, nullptr);
  EXPECT_EQ(GetString(r->result(), "config.default_image"), "from-env:2");
  EXPECT_EQ(GetString(r->result(), "config.api_key"), "***");
  // A TOML table is accepted beside the documented name=image form, and adds to the
  // default alias.
  EXPECT_EQ(GetString(r->result(), "config.image_aliases.py"), "python:3.12");
  EXPECT_EQ(GetString(r->result(), "config.image_aliases.code"), "opensandbox/code-interpreter:v1.1.0");
  r = Ok(shim, "sandbox.list", "{}");
  ASSERT_NE(r, nullptr);
  EXPECT_FALSE(r->IsError());
}

TEST_F(ProviderTest, SandboxMetricsIsExecdsSample) {
  EppSession* shim = nullptr;
  std::string id;
  ASSERT_TRUE(StartShimWithSandbox(&shim, &id));
  MessagePtr r = Ok(shim, "sandbox.metrics", JsonObject().Str("sandbox_id", id).str());
  ASSERT_NE(r, nullptr);
  const rapidjson::Value& m = r->result();
  ASSERT_TRUE(m.IsObject()) << r->raw;
  for (const char* key : {"cpu_count", "cpu_used_pct", "mem_total_mib", "mem_used_mib"}) {
    ASSERT_TRUE(m.HasMember(key) && m[key].IsNumber()) << key << ": " << r->raw;
  }
  EXPECT_GE(m["cpu_count"].GetDouble(), 1);
  EXPECT_GE(m["cpu_used_pct"].GetDouble(), 0);
  EXPECT_LE(m["cpu_used_pct"].GetDouble(), 100);
  EXPECT_GT(m["mem_used_mib"].GetDouble(), 0);
  EXPECT_LE(m["mem_used_mib"].GetDouble(), m["mem_total_mib"].GetDouble());
  const int64_t at = ParseRfc3339Seconds(GetString(m, "at"));
  EXPECT_LT(std::llabs(at - static_cast<int64_t>(std::time(nullptr))), 120) << r->raw;
  EXPECT_EQ(GetString(m, "at").back(), 'Z') << r->raw;

  r = Call(shim, "sandbox.metrics", "{}");
  ASSERT_NE(r, nullptr);
  EXPECT_EQ(r->ErrorCode(), -32602) << r->raw;
  r = Call(shim, "sandbox.metrics", R"({"sandbox_id":"no-such-sandbox"})");
  ASSERT_NE(r, nullptr);
  EXPECT_EQ(r->EppCode(), "E8005") << r->raw;
}

TEST_F(ProviderTest, DoctorChecksEverything) {
  EppSession* shim = StartInitializedShim();
  ASSERT_NE(shim, nullptr);
  ASSERT_FALSE(CreateSandbox(shim).empty());
  MessagePtr r = Ok(shim, "provider.doctor", "{}", Millis(30000));
  ASSERT_NE(r, nullptr);
  EXPECT_TRUE(GetBool(r->result(), "ok")) << r->raw;
  std::string names;
  for (const auto& c : Find(r->result(), "checks")->GetArray()) names += GetString(c, "name") + ",";
  EXPECT_EQ(names, "configuration,bridge,server_reachable,clock_skew,api_key,execd_version,");
  if (!api_key().empty()) {
    EXPECT_EQ(r->raw.find(api_key()), std::string::npos);
  }
}

}  // namespace
}  // namespace abx::e2e
