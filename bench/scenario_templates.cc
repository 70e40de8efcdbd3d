// Templates and snapshots. (1) `sandbox.create` from a template against the same create
// from the image it was built on, with the fake's containers taking a stated time to
// start (fault start_ms): what a template adds to a create, its lookup and a restore.
// (2) `sandbox.snapshot` of a sandbox holding 100 MiB against a direct client taking
// the same snapshot with the lifecycle API (POST, then GET every 100 ms until Ready).
#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include <rapidjson/document.h>

#include "bench/direct_client.h"
#include "bench/scenarios.h"
#include "bench/side_by_side.h"

namespace abx::bench {
namespace {

// How long the fake's containers take to start: a small image's `docker run` on a warm
// host. Both sides of the create row pay it.
constexpr int kStartMs = 1500;
constexpr char kTemplate[] = "bench-template";
constexpr long long kSnapshotBytes = 100LL << 20;

// A create of `template_name`; its id joins `made`, killed after the row (not timed).
bool Create(ShimSession& s, const std::string& template_name, std::vector<std::string>* made, std::string* why) {
  Answer created = s.Call("sandbox.create", "{\"template\":\"" + template_name + "\"}", 120000);
  const std::string id = IdOf(created);
  if (id.empty()) {
    *why = "sandbox.create " + template_name + ": " + created.error;
    return false;
  }
  made->push_back(id);
  return true;
}

// The direct side of the snapshot row: the lifecycle API as a client would use it.
bool SnapshotDirect(const BenchContext& ctx, const std::string& sandbox, std::string* id, std::string* why) {
  DirectClient client;
  const std::vector<std::string> headers = {"OPEN-SANDBOX-API-KEY: " + ctx.api_key, "Content-Type: application/json"};
  HttpResult posted = client.Post(ctx.fake.base_url() + "/v1/sandboxes/" + sandbox + "/snapshots", "{}", headers);
  rapidjson::Document doc;
  doc.Parse(posted.body.c_str(), posted.body.size());
  if (!posted.ok || posted.status != 202 || !doc.IsObject() || !doc.HasMember("id")) {
    *why = "POST snapshots: HTTP " + std::to_string(posted.status);
    return false;
  }
  *id = doc["id"].GetString();
  for (int i = 0; i < 6000; ++i) {
    HttpResult got = client.Get(ctx.fake.base_url() + "/v1/snapshots/" + *id, headers);
    rapidjson::Document state;
    state.Parse(got.body.c_str(), got.body.size());
    if (got.ok && state.IsObject() && state.HasMember("status")) {
      const std::string s = state["status"]["state"].GetString();
      if (s == "Ready") return true;
      if (s != "Creating") {
        *why = "snapshot " + s;
        return false;
      }
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  *why = "snapshot never Ready";
  return false;
}

}  // namespace

void RunTemplates(BenchContext& ctx) {
  const std::string create_row = "templates: sandbox.create from a template, median (fake start " +
                                 std::to_string(kStartMs) + " ms)";
  const std::string snapshot_row = "templates: sandbox.snapshot of a sandbox holding 100 MiB, median";
  auto fail_both = [&](const std::string& why) {
    ctx.report.Add({create_row, why, "", "", "≤ 1.1×", "n/a"});
    ctx.report.Add({snapshot_row, why, "", "", "≤ 1.5×", "n/a"});
  };
  ShimSession s;
  std::string error;
  if (!ctx.OpenSession(&s, &error)) return fail_both("session failed: " + error);
  Answer built = s.Call("templates.build",
                        std::string("{\"name\":\"") + kTemplate + "\",\"from\":\"base\",\"run\":[\"true\"]}", 300000);
  if (!built.ok) return fail_both("templates.build: " + built.error);

  // 1. Create from the template vs from its image, both paying the same start.
  if (!ctx.SetFakeStartDelay(kStartMs)) {
    ctx.report.Add({create_row, "the fake refused the start_ms fault", "", "", "≤ 1.1×", "n/a"});
  } else {
    std::vector<std::string> made;
    const SideBySide r = Alternate(
        1, ctx.options.template_runs, [&](std::string* why) { return Create(s, kTemplate, &made, why); },
        [&](std::string* why) { return Create(s, "base", &made, why); });
    AddMedianRow(ctx, create_row, "sandbox.create of its image (`base`), same fake", 1.1, "templates",
                 "create from a template vs from its image", r);
    ctx.SetFakeStartDelay(0);
    for (const std::string& id : made) s.Call("sandbox.kill", "{\"sandbox_id\":\"" + id + "\"}", 30000);
  }

  // 2. A snapshot of 100 MiB of files: ours against the lifecycle API used directly.
  Answer made = s.Call("sandbox.create", "{\"template\":\"base\"}", 120000);
  const std::string sandbox = IdOf(made);
  if (sandbox.empty()) {
    ctx.report.Add({snapshot_row, "sandbox.create: " + made.error, "", "", "≤ 1.5×", "n/a"});
  } else {
    Answer filled = s.Call("exec.run",
                           "{\"sandbox_id\":\"" + sandbox + "\",\"command\":\"head -c " +
                               std::to_string(kSnapshotBytes) + " /dev/urandom > /root/blob && echo ok\"}",
                           120000);
    std::vector<std::string> taken;
    const SideBySide r = Alternate(
        1, ctx.options.snapshot_runs,
        [&](std::string* why) {
          Answer a = s.Call("sandbox.snapshot", "{\"sandbox_id\":\"" + sandbox + "\"}", 300000);
          if (!a.ok) *why = a.error;
          if (!IdOf(a).empty()) taken.push_back(IdOf(a));
          return a.ok;
        },
        [&](std::string* why) {
          std::string id;
          const bool ok = SnapshotDirect(ctx, sandbox, &id, why);
          if (!id.empty()) taken.push_back(id);
          return ok;
        });
    if (!filled.ok) {
      ctx.report.Add({snapshot_row, "filling the sandbox: " + filled.error, "", "", "≤ 1.5×", "n/a"});
    } else {
      AddMedianRow(ctx, snapshot_row, "the lifecycle API directly (POST, GET every 100 ms until Ready)", 1.5,
                   "templates", "snapshot of 100 MiB", r);
    }
    for (const std::string& id : taken) s.Call("snapshot.delete", "{\"snapshot_id\":\"" + id + "\"}", 30000);
    s.Call("sandbox.kill", "{\"sandbox_id\":\"" + sandbox + "\"}", 30000);
  }
  s.Call("templates.delete", std::string("{\"name\":\"") + kTemplate + "\"}", 60000);
  s.Close();
}

}  // namespace abx::bench
