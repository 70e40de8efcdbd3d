// The warm pool (docs/epp1.md §3, "sandbox.pool"). With the fake's containers taking a
// stated time to start (fault start_ms): a `sandbox.create` the pool answers against the
// four upstream calls it makes, made directly (PATCH metadata, GET, renew, execd ping), and
// against a cold create beside it; the bridge's RSS holding a pool of 16; the bridge's
// CPU while it holds them and nothing else happens (renewals only).
#include <ctime>
#include <string>
#include <thread>
#include <vector>

#include <rapidjson/document.h>

#include "bench/child.h"
#include "bench/clock.h"
#include "bench/cpu_meter.h"
#include "bench/direct_client.h"
#include "bench/report.h"
#include "bench/scenarios.h"
#include "bench/side_by_side.h"

namespace abx::bench {
namespace {

constexpr int kStartMs = 1500;
constexpr int kPoolSize = 16;
constexpr int kPoolTtlS = 60;      // the shortest: renewals every 20 s, so the idle window holds one
constexpr int kIdleWindowS = 30;

bool OpenPoolSession(const BenchContext& ctx, ShimSession* s, std::string* error) {
  ShimConfig config = ctx.Shim();
  config.env.push_back("ABX_OPENSANDBOX_POOL=base=" + std::to_string(kPoolSize));
  config.env.push_back("ABX_OPENSANDBOX_POOL_TTL=" + std::to_string(kPoolTtlS));
  if (!s->Start(config, error)) return false;
  Answer a = s->Initialize();
  if (!a.ok) *error = "initialize: " + a.error;
  return a.ok;
}

int Ready(ShimSession& s) {
  Answer info = s.Call("provider.info", "{}", 10000);
  if (!info.ok || !info.result->HasMember("pool")) return -1;
  const rapidjson::Value& pool = (*info.result)["pool"];
  return pool.HasMember("base") ? pool["base"]["ready"].GetInt() : -1;
}

bool WaitFull(ShimSession& s, int seconds) {
  for (int i = 0; i < seconds * 10; ++i) {
    if (Ready(s) == kPoolSize) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  return false;
}

// RFC 3339 UTC an hour from now (this host's clock; the fake runs on it).
std::string InAnHour() {
  const std::time_t later = std::time(nullptr) + 3600;
  std::tm utc{};
  gmtime_r(&later, &utc);
  char text[32];
  std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%SZ", &utc);
  return text;
}

}  // namespace

void RunPool(BenchContext& ctx) {
  const std::string hit_row = "pool: sandbox.create taken from the pool, median";
  const std::string cold_row = "pool: the same create cold (fake start " + std::to_string(kStartMs) + " ms), median";
  const std::string rss_row = "pool: bridge RSS holding a pool of 16";
  const std::string cpu_row = "pool: bridge CPU holding a pool of 16, idle (renewals only)";
  auto fail_all = [&](const std::string& why) {
    for (const std::string& row : {hit_row, cold_row, rss_row, cpu_row}) ctx.report.Add({row, why, "", "", "", "n/a"});
  };
  ShimSession s;
  std::string error;
  if (!ctx.SetFakeStartDelay(kStartMs)) return fail_all("the fake refused the start_ms fault");
  if (!OpenPoolSession(ctx, &s, &error)) return fail_all("session failed: " + error);
  // 16 starts in parallel, each 1.5 s: the pool is full within seconds.
  if (!WaitFull(s, 60)) return fail_all("the pool did not fill: " + std::to_string(Ready(s)) + " ready");

  // 1. RSS and idle CPU while it holds 16.
  std::this_thread::sleep_for(std::chrono::seconds(1));
  const long long rss = ProcStatusBytes(ctx.bridge_pid, "VmRSS");
  ctx.report.Add({rss_row, Mib(static_cast<double>(rss)), "—", "", "≤ 64 MiB", Met(rss > 0 && rss <= (64LL << 20))});
  const double cpu_before = ProcessCpuSeconds(ctx.bridge_pid, false);
  std::this_thread::sleep_for(std::chrono::seconds(kIdleWindowS));
  const double cpu_s = ProcessCpuSeconds(ctx.bridge_pid, false) - cpu_before;
  const double percent = cpu_s * 100.0 / kIdleWindowS;
  char cpu_text[64];
  std::snprintf(cpu_text, sizeof cpu_text, "%.3f%% of a core (%.0f ms in %d s)", percent, cpu_s * 1000, kIdleWindowS);
  ctx.report.Add({cpu_row, cpu_text, "—", "", "≤ 0.5%", Met(percent <= 0.5)});

  // 2. Hits against the same four calls made directly, and against a cold create.
  DirectClient direct;
  const std::vector<std::string> lifecycle_headers = {"OPEN-SANDBOX-API-KEY: " + ctx.api_key,
                                                      "Content-Type: application/json"};
  std::vector<std::string> made;
  const int runs = std::min(8, kPoolSize / 2);
  const SideBySide hits = Alternate(
      0, runs,
      [&](std::string* why) {
        Answer a = s.Call("sandbox.create", "{\"template\":\"base\",\"metadata\":{\"task\":\"bench\"}}", 60000);
        const std::string id = IdOf(a);
        if (id.empty() || !a.result->HasMember("pooled")) {
          *why = id.empty() ? a.error : "not from the pool";
          return false;
        }
        made.push_back(id);
        return true;
      },
      [&](std::string* why) {
        // The same calls on the set-up's sandbox: its metadata, the server's clock (a GET
        // of it) and its expiry, its execd.
        HttpResult patched = direct.Patch(ctx.fake.base_url() + "/v1/sandboxes/" + ctx.sandbox_id + "/metadata",
                                          "{\"task\":\"bench\"}", lifecycle_headers);
        HttpResult got = direct.Get(ctx.fake.base_url() + "/v1/sandboxes/" + ctx.sandbox_id, lifecycle_headers);
        HttpResult renewed = direct.Post(ctx.fake.base_url() + "/v1/sandboxes/" + ctx.sandbox_id + "/renew-expiration",
                                         "{\"expiresAt\":\"" + InAnHour() + "\"}", lifecycle_headers);
        HttpResult pinged = direct.Get(ctx.execd_base + "/ping");
        const bool ok = patched.ok && patched.status == 200 && got.ok && got.status == 200 && pinged.ok &&
                        pinged.status == 200 && renewed.ok;
        if (!ok) *why = "direct calls: " + std::to_string(patched.status) + "/" + std::to_string(renewed.status) +
                        "/" + std::to_string(pinged.status);
        return ok;
      });
  Row hit{hit_row, Ms(hits.ours.median), Ms(hits.base.median) + " (the four calls it makes, direct)", "", "≤ 20 ms",
          "n/a"};
  if (hits.ours.count && hits.base.count) {
    hit.ratio = Times(hits.ours.median / hits.base.median);
    hit.met = Met(hits.ours.median <= 20 && hits.ours_errors == 0);
  }
  ctx.report.Add(hit);
  ctx.report.Note("pool", "hits: ours " + Describe(hits.ours, "ms") + ", direct " + Describe(hits.base, "ms") +
                              (hits.ours_errors ? "; errors: " + hits.error : ""));

  std::vector<double> cold_ms;
  for (int i = 0; i < 3; ++i) {
    Stopwatch t;
    Answer a = s.Call("sandbox.create", "{\"template\":\"base\",\"env\":{\"COLD\":\"1\"}}", 60000);
    if (!IdOf(a).empty()) {
      cold_ms.push_back(t.ElapsedMs());
      made.push_back(IdOf(a));
    }
  }
  const Summary cold = Summarize(cold_ms);
  Row cold_out{cold_row, Ms(cold.median), "—", "", "—", "—"};
  if (cold.count && hits.ours.count) cold_out.ratio = "hit " + Times(hits.ours.median / cold.median);
  ctx.report.Add(cold_out);

  for (const std::string& id : made) s.Call("sandbox.kill", "{\"sandbox_id\":\"" + id + "\"}", 30000);
  ctx.SetFakeStartDelay(0);
  s.Close();
}

}  // namespace abx::bench
