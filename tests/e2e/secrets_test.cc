// The secrets sweep (docs/epp1.md §4: a secret never appears in a message, a log line,
// provider.info or provider.doctor; the project's rule adds: nor in any argv or
// environment of a process the provider starts).
//
// Full sessions run with a known API key, registry credentials (from the environment
// and from provider_options), and an execd access token the fake enforces; they
// create, exec, use files, hit error paths (wrong API key, wrong execd token, a missing
// file), and call provider.info and provider.doctor. Afterwards every place a secret
// could leak to is searched for each secret, raw and base64-encoded: every line each
// shim wrote to stdout, each shim's stderr, every file under the bridge's socket
// directory (its log) and under HOME, the bridge's argv and environment, and the argv and
// environment of every process the fake ran for a command. The registry password is
// sent to the server in the create body, as it must be; nowhere else.

#include <dirent.h>
#include <unistd.h>

#include <filesystem>
#include <map>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "tests/e2e/base64_encode.h"
#include "tests/e2e/harness.h"

namespace abx::e2e {
namespace {

constexpr char kExecdToken[] = "execd-Tok-51c2e8aa90-sEcReT";
constexpr char kRegistryUser[] = "reg-user-4b1d77";
constexpr char kRegistryPasswordEnv[] = "reg-Pass-env-93a1f7c2e6";
constexpr char kOptionUser[] = "opt-user-2c9e10";
constexpr char kRegistryPasswordOption[] = "reg-Pass-opt-0d5e2b8c44";
constexpr char kWrongApiKey[] = "wrong-Key-6e0f2a9d13-nope";
constexpr char kWrongExecdToken[] = "wrong-Tok-a81f3c0b77-nope";

// /proc/<pid>/<file> with NULs shown as spaces ("" when unreadable).
std::string ProcText(pid_t pid, const char* file) {
  std::string text = ReadFile("/proc/" + std::to_string(pid) + "/" + file);
  for (char& c : text) {
    if (c == '\0') c = ' ';
  }
  return text;
}

pid_t ParentOf(pid_t pid) {
  const std::string stat = ReadFile("/proc/" + std::to_string(pid) + "/stat");
  const size_t close = stat.rfind(')');  // the command name may hold spaces and ')'
  if (close == std::string::npos || close + 4 >= stat.size()) return -1;
  // ") S PPID ..."
  return static_cast<pid_t>(std::strtol(stat.c_str() + close + 4, nullptr, 10));
}

// Every live process below `root` (not `root` itself).
std::vector<pid_t> Descendants(pid_t root) {
  std::map<pid_t, pid_t> parent;
  if (DIR* dir = ::opendir("/proc")) {
    while (dirent* entry = ::readdir(dir)) {
      char* end = nullptr;
      const long pid = std::strtol(entry->d_name, &end, 10);
      if (*end != '\0' || pid <= 0) continue;
      parent[static_cast<pid_t>(pid)] = ParentOf(static_cast<pid_t>(pid));
    }
    ::closedir(dir);
  }
  std::vector<pid_t> out;
  for (const auto& [pid, ppid] : parent) {
    for (pid_t up = ppid, hops = 0; up > 1 && hops < 64; up = parent.count(up) ? parent[up] : -1, ++hops) {
      if (up == root) {
        out.push_back(pid);
        break;
      }
    }
  }
  return out;
}

class SecretsTest : public TestEnv {
 protected:
  std::vector<std::string> FakeFlags() const override {
    return {"--api-key", kApiKey, "--execd-token", kExecdToken};
  }

  // Every secret of these sessions with how it may be spelled when it leaks.
  static std::map<std::string, std::string> Needles() {
    std::map<std::string, std::string> needles;
    auto add = [&](const std::string& name, const std::string& secret) {
      needles[name] = secret;
      needles[name + " (base64)"] = Base64(secret);
    };
    add("API key", kApiKey);
    add("execd token", kExecdToken);
    add("registry password (env)", kRegistryPasswordEnv);
    add("registry password (provider_options)", kRegistryPasswordOption);
    add("wrong API key", kWrongApiKey);
    add("wrong execd token", kWrongExecdToken);
    add("registry user:password (env)",
        std::string(kRegistryUser) + ":" + kRegistryPasswordEnv);
    add("registry user:password (provider_options)",
        std::string(kOptionUser) + ":" + kRegistryPasswordOption);
    return needles;
  }

  // Adds one failure per secret found in `text`, naming where.
  void Sweep(const std::string& where, const std::string& text) {
    ++places_swept_;
    for (const auto& [name, needle] : Needles()) {
      const size_t at = text.find(needle);
      if (at == std::string::npos) continue;
      const size_t from = at < 120 ? 0 : at - 120;
      ADD_FAILURE() << "the " << name << " appears in " << where << ": ..."
                    << text.substr(from, needle.size() + 240) << "...";
    }
  }

  // Every file below `dir` (sockets and other non-regular files skipped).
  void SweepTree(const std::string& dir) {
    std::error_code ec;
    for (auto it = std::filesystem::recursive_directory_iterator(dir, ec);
         !ec && it != std::filesystem::recursive_directory_iterator(); it.increment(ec)) {
      if (it->is_regular_file(ec)) Sweep("file " + it->path().string(), ReadFile(it->path()));
    }
  }

  // Everything one shim wrote: stdout (received lines only: the lines sent to it hold
  // provider_options secrets on purpose) and stderr.
  void SweepShim(const std::string& name, EppSession* shim) {
    std::string out;
    for (const MessagePtr& m : shim->AllMessages()) out += m->raw + "\n";
    EXPECT_FALSE(out.empty()) << name << " wrote nothing";
    Sweep(name + " stdout", out);
    Sweep(name + " stderr", shim->StderrText());
  }

  // The environment of the main shim: every secret the provider reads from it.
  std::map<std::string, std::optional<std::string>> SecretEnv() const {
    return {
        {"ABX_OPENSANDBOX_EXECD_ACCESS_TOKEN", kExecdToken},
        {"ABX_OPENSANDBOX_REGISTRY_USERNAME", kRegistryUser},
        {"ABX_OPENSANDBOX_REGISTRY_PASSWORD", kRegistryPasswordEnv},
        // The OpenSandbox-native name too, which the bridge's environment must also lose.
        {"OPEN_SANDBOX_API_KEY", kApiKey},
    };
  }

  MessagePtr Ok(EppSession* shim, const std::string& method, const std::string& params,
                Millis timeout = Millis(20000)) {
    MessagePtr response = shim->Request(method, params, timeout);
    EXPECT_NE(response, nullptr) << "no answer to " << method;
    if (response) {
      EXPECT_FALSE(response->IsError()) << method << ": " << response->raw;
    }
    return response;
  }

  MessagePtr Failing(EppSession* shim, const std::string& method, const std::string& params,
                     const std::string& epp_code, Millis timeout = Millis(20000)) {
    MessagePtr response = shim->Request(method, params, timeout);
    EXPECT_NE(response, nullptr) << "no answer to " << method;
    if (response) {
      EXPECT_EQ(response->EppCode(), epp_code) << method << ": " << response->raw;
    }
    return response;
  }

  int places_swept_ = 0;
};

TEST_F(SecretsTest, NoSecretLeavesTheProviderAnywhere) {
  REQUIRE_FAKE("an execd token of the test's choosing, the fake's command processes and stats");
  // The real execd takes the token in its sandbox (bootstrap's EXECD variable, execd's
  // argv), so the jail, execd and every command it runs hold it, by the server's doing.
  REQUIRE_FAKE_EXECD("the token kept out of the sandbox's processes and commands' environment");
  // 1. The session holding every secret; it is the first, so it starts the bridge with
  //    its own environment.
  EppSession* shim = StartInitializedShim(SecretEnv());
  ASSERT_NE(shim, nullptr);
  const std::optional<pid_t> bridge = BridgePid();
  ASSERT_TRUE(bridge.has_value()) << "no bridge pid in " << lock_path();

  // The secrets did reach the provider: provider.info shows each one masked.
  MessagePtr info = Ok(shim, "provider.info", "{}");
  ASSERT_NE(info, nullptr);
  for (const char* field : {"api_key", "registry_password", "execd_access_token"}) {
    EXPECT_EQ(GetString(info->result(), std::string("config.") + field), "***")
        << field << ": " << info->raw;
  }

  const std::string sandbox = CreateSandbox(shim);
  ASSERT_FALSE(sandbox.empty());
  const std::string with_options = CreateSandbox(
      shim, JsonObject()
                .Str("template", "base")
                .Raw("provider_options", JsonObject()
                                             .Str("registry_username", kOptionUser)
                                             .Str("registry_password", kRegistryPasswordOption)
                                             .str())
                .str());
  ASSERT_FALSE(with_options.empty());
  const std::string in_sandbox = JsonObject().Str("sandbox_id", sandbox).str();

  // Commands, whose own environment and argv go to stdout (and so into the sweep).
  const std::string show_self =
      "tr '\\0' '\\n' < /proc/$$/environ; tr '\\0' ' ' < /proc/$$/cmdline; echo";
  MessagePtr ran = Ok(shim, "exec.run",
                      JsonObject().Str("sandbox_id", sandbox).Str("command", show_self).str());
  ASSERT_NE(ran, nullptr);
  EXPECT_NE(GetString(ran->result(), "stdout").find("PATH="), std::string::npos)
      << "the command did not show its environment: " << ran->raw;
  const int64_t start_id = shim->SendRequest(
      "exec.start", JsonObject()
                        .Str("sandbox_id", sandbox)
                        .Str("command", show_self + "; echo started; sleep 3")
                        .Raw("env", R"({"GREETING":"hello"})")
                        .str());
  MessagePtr started = shim->WaitResponse(start_id);
  ASSERT_NE(started, nullptr);
  ASSERT_FALSE(started->IsError()) << started->raw;
  const std::string exec_id = GetString(started->result(), "exec_id");
  ASSERT_NE(shim->WaitNotification(exec_id, "exec.output", Millis(10000)), nullptr);

  // While the command sleeps: every process the fake runs for commands.
  int command_processes = 0;
  for (pid_t pid : Descendants(fake().pid())) {
    ++command_processes;
    Sweep("argv of command process " + std::to_string(pid), ProcText(pid, "cmdline"));
    Sweep("environment of command process " + std::to_string(pid), ProcText(pid, "environ"));
  }
  EXPECT_GE(command_processes, 1) << "found no process of the running command";
  ExecTrace trace = TraceExec(shim, exec_id, started, Millis(15000));
  EXPECT_TRUE(trace.problems.empty()) << JoinProblems(trace);
  EXPECT_NE(trace.stdout_data.find("GREETING=hello"), std::string::npos) << trace.stdout_data;
  EXPECT_TRUE(trace.exit && GetInt(trace.exit->params(), "exit_code", -1) == 0)
      << (trace.exit ? trace.exit->raw : std::string("no exit"));

  // Files and an error path through execd.
  Ok(shim, "files.write",
     JsonObject().Str("sandbox_id", sandbox).Str("path", "/tmp/s.txt").Str("data", "data").str());
  Ok(shim, "files.read", JsonObject().Str("sandbox_id", sandbox).Str("path", "/tmp/s.txt").str());
  Ok(shim, "files.list", JsonObject().Str("sandbox_id", sandbox).Str("path", "/tmp").str());
  Failing(shim, "files.read",
          JsonObject().Str("sandbox_id", sandbox).Str("path", "/tmp/none.txt").str(), "E8005");
  Ok(shim, "ports.url", JsonObject().Str("sandbox_id", sandbox).Int("port", 8080).str());
  // (No process.list: the fake's "sandbox" is this host, so it lists the fake itself,
  // whose argv holds the key and the token the test gave it.)
  MessagePtr doctor = Ok(shim, "provider.doctor", in_sandbox, Millis(30000));
  ASSERT_NE(doctor, nullptr);
  EXPECT_TRUE(GetBool(doctor->result(), "ok", false)) << doctor->raw;

  // 2. Wrong API key, with registry credentials in provider_options: E8003.
  EppSession* wrong_key = StartInitializedShim({{"ABX_OPENSANDBOX_API_KEY", kWrongApiKey}});
  ASSERT_NE(wrong_key, nullptr);
  Failing(wrong_key, "sandbox.list", "{}", "E8003");
  Failing(wrong_key, "sandbox.get", in_sandbox, "E8003");
  Failing(wrong_key, "sandbox.create",
          JsonObject()
              .Str("template", "base")
              .Raw("provider_options", JsonObject()
                                           .Str("registry_username", kOptionUser)
                                           .Str("registry_password", kRegistryPasswordOption)
                                           .str())
              .str(),
          "E8003");
  MessagePtr wrong_doctor = wrong_key->Request("provider.doctor", "{}", Millis(30000));
  ASSERT_NE(wrong_doctor, nullptr);
  EXPECT_FALSE(GetBool(wrong_doctor->result(), "ok", true)) << wrong_doctor->raw;
  wrong_key->Request("provider.info", "{}");

  // 3. Wrong execd token: the server accepts the key, execd refuses the token.
  EppSession* wrong_token = StartInitializedShim(
      {{"ABX_OPENSANDBOX_EXECD_ACCESS_TOKEN", kWrongExecdToken}});
  ASSERT_NE(wrong_token, nullptr);
  auto live_before = fake().Stats();
  ASSERT_TRUE(live_before.has_value());
  const auto create_sent = Clock::now();
  MessagePtr refused = wrong_token->Request(
      "sandbox.create", R"({"template":"base","provider_options":{"ready_timeout":20}})",
      Millis(30000));
  ASSERT_NE(refused, nullptr);
  // execd answers 401 to every ping: that is E8003 at once, not E8006 after ready_timeout.
  EXPECT_EQ(refused->EppCode(), "E8003") << refused->raw;
  EXPECT_LT(std::chrono::duration_cast<Millis>(Clock::now() - create_sent).count(), 10000)
      << "a refused token was waited out: " << refused->raw;
  auto live_after = fake().Stats();
  ASSERT_TRUE(live_after.has_value());
  EXPECT_EQ(live_after->live_sandboxes, live_before->live_sandboxes)
      << "the sandbox whose execd refused the token was left";
  Failing(wrong_token, "files.stat",
          JsonObject().Str("sandbox_id", sandbox).Str("path", "/tmp").str(), "E8003");
  wrong_token->Request("exec.run",
                       JsonObject().Str("sandbox_id", sandbox).Str("command", "true").str());
  wrong_token->Request("provider.doctor", in_sandbox, Millis(30000));

  Ok(shim, "sandbox.kill", in_sandbox);
  Ok(shim, "sandbox.kill", JsonObject().Str("sandbox_id", with_options).str());

  // 4. The sweep.
  Sweep("bridge argv", ProcText(*bridge, "cmdline"));
  const std::string bridge_env = ProcText(*bridge, "environ");
  EXPECT_FALSE(bridge_env.empty()) << "cannot read the bridge's environment";
  Sweep("bridge environment", bridge_env);
  for (const char* name : {"ABX_OPENSANDBOX_API_KEY", "ABX_OPENSANDBOX_REGISTRY",
                           "ABX_OPENSANDBOX_EXECD_ACCESS_TOKEN", "OPEN_SANDBOX_API_KEY"}) {
    EXPECT_EQ(bridge_env.find(name), std::string::npos)
        << "the bridge's environment holds " << name;
  }
  EXPECT_EQ(bridge_env.find(kRegistryUser), std::string::npos);
  SweepShim("the main shim", shim);
  SweepShim("the wrong-key shim", wrong_key);
  SweepShim("the wrong-token shim", wrong_token);
  const std::string log = ReadFile(bridge_log_path());
  EXPECT_FALSE(log.empty()) << "no bridge log at " << bridge_log_path();
  SweepTree(socket_dir());  // the bridge log and anything else the bridge keeps there
  SweepTree(home_dir());
  std::fprintf(stderr, "swept %d places for %zu secret spellings; %d command processes\n",
               places_swept_, Needles().size(), command_processes);
}

}  // namespace
}  // namespace abx::e2e
