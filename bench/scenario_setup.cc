// Set-up and tear-down of the run: everything the scenarios share.
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <random>
#include <vector>

#include <rapidjson/document.h>

#include "bench/clock.h"
#include "bench/scenarios.h"

namespace abx::bench {
namespace {

std::string RandomKey() {
  std::random_device rd;
  static const char* kHex = "0123456789abcdef";
  std::string key = "bench-";
  for (int i = 0; i < 24; ++i) key += kHex[rd() & 15];
  return key;
}

// Every bridge of this run runs the run's private copy of the binary (SetUp), whatever
// socket it serves: the one the shims are given, or one beside it that a shim of another
// build started for itself. So they are found by their executable, before the set-up has
// learnt any pid, and nothing else on the machine can match.
std::vector<pid_t> BridgesOfThisRun(const BenchContext& ctx) {
  std::vector<pid_t> pids;
  const std::string& binary = ctx.options.bridge;
  // Before the copy is made (a set-up that failed early) this is the caller's binary,
  // whose bridges are not the run's to stop.
  if (binary.rfind(ctx.work_dir + "/bin/", 0) != 0) return pids;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator("/proc", ec)) {
    const std::string name = entry.path().filename().string();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    std::error_code link_error;
    const auto exe = std::filesystem::read_symlink(entry.path() / "exe", link_error);
    if (!link_error && exe == binary) pids.push_back(static_cast<pid_t>(std::stol(name)));
  }
  return pids;
}

// Asks each bridge listening in the work directory to stop, as a user would.
void StopBridgesBySocket(const BenchContext& ctx) {
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(ctx.work_dir, ec)) {
    if (entry.path().extension() != ".sock") continue;
    Child stop;
    SpawnOptions spawn;
    spawn.argv = {ctx.options.bridge, "stop", "--socket", entry.path().string()};
    spawn.env = CurrentEnvironment({"ABX_", "OPEN_SANDBOX_"});
    std::string error;
    if (stop.Spawn(spawn, &error)) stop.Wait(10000);
  }
}

}  // namespace

bool SetUp(BenchContext& ctx, std::string* error) {
  char work[] = "/tmp/abx-bench-XXXXXX";
  if (!mkdtemp(work)) {
    *error = "mkdtemp failed";
    return false;
  }
  ctx.work_dir = work;
  chmod(work, 0700);
  mkdir((ctx.work_dir + "/home").c_str(), 0700);
  ctx.socket_path = ctx.work_dir + "/b.sock";
  // Private copies: other builds in the same workspace may replace bazel-bin's files
  // while the run is going on, and every shim start executes the binary again.
  const std::string bin = ctx.work_dir + "/bin";
  mkdir(bin.c_str(), 0700);
  for (std::string* binary : {&ctx.options.shim, &ctx.options.bridge, &ctx.options.fake}) {
    const std::string copy = bin + "/" + std::filesystem::path(*binary).filename().string();
    std::error_code ec;
    std::filesystem::copy_file(*binary, copy, ec);
    if (ec) {
      *error = "copy " + *binary + ": " + ec.message();
      return false;
    }
    chmod(copy.c_str(), 0700);
    *binary = copy;
  }
  // The fake takes its key only as a flag; this one is made up for this run and
  // protects nothing but the run's own throwaway server.
  ctx.api_key = RandomKey();

  // --sse-grace-ms 0: real execd idles ~1 s after a command's last event before it ends
  // the stream. Clients that read to the end (the SDK, the direct baseline) would pay
  // that second on every command and the comparison would measure the grace, not the
  // software; the bridge does not wait for it. See docs/PERFORMANCE.md.
  std::vector<std::string> fake_args = {"--port", "0", "--api-key", ctx.api_key, "--sse-grace-ms",
                                        std::to_string(ctx.options.sse_grace_ms),
                                        "--execd-ready-after", "0", "--exit-on-stdin-eof"};
  if (!ctx.options.execd_binary.empty()) {
    // The real execd's own grace is set the same way (EXECD_API_GRACE_SHUTDOWN, from the
    // fake's --sse-grace-ms).
    fake_args.insert(fake_args.end(), {"--execd-binary", ctx.options.execd_binary});
  }
  if (!ctx.fake.Start(ctx.options.fake, fake_args, ctx.LogPath("fake"), error)) {
    return false;
  }

  // The first shim finds no bridge and starts one: the one-off cost a user pays once.
  ShimSession first;
  Stopwatch first_start;
  if (!ctx.OpenSession(&first, error)) return false;
  const double first_ms = first_start.ElapsedMs();
  ctx.report.Note("cold start", "first shim of the run (bridge not running yet, started by the shim): initialize answered after " +
                                    Ms(first_ms));

  Answer created = first.Call("sandbox.create", "{\"template\":\"base\",\"timeout\":3600,\"metadata\":{\"purpose\":\"bench\"}}");
  if (!created.ok || !created.result->IsObject() || !created.result->HasMember("id")) {
    *error = "sandbox.create: " + created.error;
    return false;
  }
  ctx.sandbox_id = (*created.result)["id"].GetString();
  first.Close();

  // The execd endpoint, as any client learns it.
  DirectClient lifecycle;
  HttpResult ep = lifecycle.Get(ctx.fake.base_url() + "/v1/sandboxes/" + ctx.sandbox_id +
                                    "/endpoints/44772?use_server_proxy=false",
                                {"OPEN-SANDBOX-API-KEY: " + ctx.api_key});
  rapidjson::Document doc;
  doc.Parse(ep.body.c_str(), ep.body.size());
  if (!ep.ok || ep.status != 200 || doc.HasParseError() || !doc.IsObject() || !doc.HasMember("endpoint")) {
    *error = "GET endpoints/44772: HTTP " + std::to_string(ep.status) + " " + ep.error;
    return false;
  }
  ctx.execd_base = DirectExecdBase(doc["endpoint"].GetString());

  if (!ctx.BridgeStatus(nullptr, nullptr, &ctx.bridge_pid, error)) return false;
  return true;
}

void TearDown(BenchContext& ctx, bool keep_work_dir) {
  if (!ctx.sandbox_id.empty()) {
    ShimSession s;
    std::string error;
    if (ctx.OpenSession(&s, &error)) {
      s.Call("sandbox.kill", ctx.Params(""));
      s.Close();
    }
  }
  // Also after a set-up that failed before it learnt the bridge's pid.
  if (!ctx.work_dir.empty()) {
    StopBridgesBySocket(ctx);
    std::vector<pid_t> left = BridgesOfThisRun(ctx);
    Stopwatch waited;
    while (!left.empty() && waited.ElapsedMs() < 5000) {
      usleep(20000);
      left = BridgesOfThisRun(ctx);
    }
    for (pid_t pid : left) kill(pid, SIGKILL);
  }
  ctx.fake.Stop();
  if (!keep_work_dir && !ctx.work_dir.empty()) {
    std::error_code ec;
    std::filesystem::remove_all(ctx.work_dir, ec);
  }
}

}  // namespace abx::bench
