// files.watch in the set-up's sandbox, whose inotifywait (the fake's sandboxes see this
// host's) makes the watches inotify ones:
//  - how long after the command that makes a file is sent its files.event arrives (median
//    of 40), beside that command's own exec.run round trip; the contract's bound for
//    inotify is 0.5 s from the change, which this is more than;
//  - 64 watches on the sandbox left alone for 10 s: upstream requests a second and the
//    bridge's CPU, against the same 10 s with no watch.
#include <chrono>
#include <cstdio>
#include <string>
#include <thread>
#include <vector>

#include "bench/clock.h"
#include "bench/cpu_meter.h"
#include "bench/fake_server.h"
#include "bench/scenarios.h"
#include "bench/stats.h"

namespace abx::bench {
namespace {

constexpr char kDir[] = "/tmp/bench-watch";

// The watch_id of a new watch, or "" (*error says why).
std::string StartWatch(ShimSession& s, BenchContext& ctx, const std::string& path, std::string* mode,
                       std::string* error) {
  Answer a = s.Call("files.watch", ctx.Params("\"path\":\"" + path + "\""), 30000);
  if (!a.ok || !a.result->IsObject() || !a.result->HasMember("watch_id")) {
    *error = "files.watch: " + a.error;
    return "";
  }
  if (mode) *mode = (*a.result)["mode"].GetString();
  return (*a.result)["watch_id"].GetString();
}

void RunLatency(BenchContext& ctx, ShimSession& s) {
  const std::string row = "watch: a new file's files.event, from sending its command (median)";
  std::string error, mode;
  s.Call("exec.run", ctx.Params(std::string("\"command\":\"rm -rf ") + kDir + " && mkdir -p " + kDir + "\""), 30000);
  const std::string watch = StartWatch(s, ctx, kDir, &mode, &error);
  if (watch.empty()) return ctx.report.Add({row, error, "", "", "≤ 500 ms", "n/a"});
  std::vector<double> to_event, to_answer;
  int lost = 0;
  for (int i = 0; i < 45; ++i) {
    const std::string name = std::string(kDir) + "/f" + std::to_string(i);
    Stopwatch clock;
    const int64_t id = s.Send("exec.run", ctx.Params("\"command\":\"touch " + name + "\""));
    const std::string id_key = "\"id\":" + std::to_string(id) + ",";
    double answered_ms = -1, event_ms = -1;
    std::string line;
    while ((answered_ms < 0 || event_ms < 0) && s.ReadRawLine(&line, 10000)) {
      if (line.find(id_key) != std::string::npos) answered_ms = clock.ElapsedMs();
      if (line.find("\"files.event\"") != std::string::npos && line.find("\"" + name + "\"") != std::string::npos) {
        event_ms = clock.ElapsedMs();
      }
    }
    if (event_ms < 0 || answered_ms < 0) {
      ++lost;
      continue;
    }
    if (i >= 5) {
      to_event.push_back(event_ms);
      to_answer.push_back(answered_ms);
    }
  }
  s.Call("files.unwatch", "{\"watch_id\":\"" + watch + "\"}", 30000);
  const Summary e = Summarize(to_event), a = Summarize(to_answer);
  ctx.report.Add({row + " [" + mode + "]", Ms(e.median), Ms(a.median) + " (that command's exec.run answered)",
                  a.count && e.count ? Times(e.median / a.median) : "", "≤ 500 ms",
                  e.count && lost == 0 ? Met(e.median <= 500) : "n/a"});
  ctx.report.Note("watch", "files.event from sending the command: " + Describe(e, "ms") + "; its exec.run: " +
                               Describe(a, "ms") + "; events missed: " + std::to_string(lost));
}

void RunIdleCost(BenchContext& ctx, ShimSession& s) {
  const std::string row = "watch: 64 watches on one sandbox, idle for 10 s";
  std::string error;
  std::string command = std::string("\"command\":\"rm -rf ") + kDir + " && for i in $(seq 0 63); do mkdir -p " +
                        kDir + "/d$i; done\"";
  s.Call("exec.run", ctx.Params(command), 30000);
  // Upstream requests are the fake's execd's count (with --execd real, upstream's execd
  // answers them and the fake counts none: the row then says so).
  auto execd_requests = [&] {
    FakeStats stats;
    std::string why;
    return ctx.fake.Stats(&stats, &why) ? stats.execd_requests : -1LL;
  };
  auto measure = [&](double* requests_per_s, double* bridge_cpu_ms) {
    const long long r0 = execd_requests();
    const CpuUsage c0 = ReadCpu(ctx.bridge_pid, ctx.fake.pid());
    Stopwatch clock;
    std::this_thread::sleep_for(std::chrono::seconds(10));
    const CpuUsage used = ReadCpu(ctx.bridge_pid, ctx.fake.pid()) - c0;
    *requests_per_s = static_cast<double>(execd_requests() - r0) / clock.ElapsedS();
    *bridge_cpu_ms = used.bridge * 1000;
  };
  double base_requests = 0, base_cpu = 0;
  measure(&base_requests, &base_cpu);
  std::vector<std::string> watches;
  std::string mode;
  for (int i = 0; i < 64; ++i) {
    const std::string w = StartWatch(s, ctx, std::string(kDir) + "/d" + std::to_string(i), &mode, &error);
    if (w.empty()) return ctx.report.Add({row, error, "", "", "—", "n/a"});
    watches.push_back(w);
  }
  double requests = 0, cpu = 0;
  measure(&requests, &cpu);
  for (const std::string& w : watches) s.Call("files.unwatch", "{\"watch_id\":\"" + w + "\"}", 30000);
  char ours[128], base[128];
  if (ctx.options.execd_binary.empty()) {
    std::snprintf(ours, sizeof ours, "%.1f execd requests/s, bridge CPU %.0f ms", requests, cpu);
    std::snprintf(base, sizeof base, "%.1f requests/s, %.0f ms (no watch)", base_requests, base_cpu);
  } else {  // upstream's execd answers what the fake does not count
    std::snprintf(ours, sizeof ours, "bridge CPU %.0f ms", cpu);
    std::snprintf(base, sizeof base, "%.0f ms (no watch)", base_cpu);
  }
  ctx.report.Add({row + " [" + mode + "]", ours, base, "", "one stream", "—"});
}

}  // namespace

void RunWatch(BenchContext& ctx) {
  ShimSession s;
  std::string error;
  if (!ctx.OpenSession(&s, &error)) {
    return ctx.report.Add({"watch: a new file's files.event", "session failed: " + error, "", "", "≤ 500 ms", "n/a"});
  }
  RunLatency(ctx, s);
  RunIdleCost(ctx, s);
  s.Call("exec.run", ctx.Params(std::string("\"command\":\"rm -rf ") + kDir + "\""), 30000);
  s.Close();
}

}  // namespace abx::bench
