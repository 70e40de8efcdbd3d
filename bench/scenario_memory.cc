// Idle memory: the bridge with no session open, and a shim that has answered
// initialize and run one command and now waits for its host.
#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <string>

#include "bench/scenarios.h"

namespace abx::bench {

namespace {

// "anon 3.1 MiB, file 6.0 MiB": what the RSS is made of (file pages are the binary and its
// shared libraries, shared with other processes that map them).
// Pss: file pages divided among the processes that map them.
long long PssBytes(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/smaps_rollup");
  std::string key;
  long long kb = -1;
  while (in >> key) {
    if (key == "Pss:") {
      in >> kb;
      return kb * 1024;
    }
  }
  return -1;
}

std::string RssSplit(pid_t pid) {
  return "anon " + Mib(static_cast<double>(ProcStatusBytes(pid, "RssAnon"))) + ", file " +
         Mib(static_cast<double>(ProcStatusBytes(pid, "RssFile"))) + ", PSS " +
         Mib(static_cast<double>(PssBytes(pid)));
}

}  // namespace

IdleRss IdleBridgeRss(BenchContext& ctx) {
  IdleRss rss;
  usleep(500000);  // let sessions that just closed finish on the bridge's side
  rss.soon = ProcStatusBytes(ctx.bridge_pid, "VmRSS");
  sleep(7);  // 5 s without a session, the next look (every second), and a margin
  rss.settled = ProcStatusBytes(ctx.bridge_pid, "VmRSS");
  return rss;
}

void RunIdleMemory(BenchContext& ctx, const std::vector<std::pair<std::string, IdleRss>>& bridge_idle) {
  long long worst = -1, worst_soon = -1;
  std::string readings;
  for (const auto& [when, rss] : bridge_idle) {
    worst = std::max(worst, rss.settled);
    worst_soon = std::max(worst_soon, rss.soon);
    readings += (readings.empty() ? "" : "; ") + when + " " + Mib(static_cast<double>(rss.soon)) + " -> " +
                Mib(static_cast<double>(rss.settled));
  }
  ctx.report.Add({"memory: idle bridge RSS (no session for 7 s, worst reading)", Mib(static_cast<double>(worst)),
                  "—", "", "≤ 20 MiB", worst > 0 ? Met(worst <= 20LL << 20) : "n/a"});
  ctx.report.Add({"memory: bridge RSS 0.5 s after the last session (worst reading)",
                  Mib(static_cast<double>(worst_soon)), "—", "", "—", "—"});
  ctx.report.Note("memory", "idle bridge VmRSS 0.5 s after the last session -> after 7 s without one: " + readings +
                                "; now " + RssSplit(ctx.bridge_pid));

  ShimSession s;
  std::string error;
  long long shim_rss = -1, shim_hwm = -1;
  std::string split;
  if (ctx.OpenSession(&s, &error)) {
    Answer a = s.Call("exec.run", ctx.Params("\"command\":\"true\""), 30000);
    usleep(200000);
    shim_rss = ProcStatusBytes(s.pid(), "VmRSS");
    shim_hwm = ProcStatusBytes(s.pid(), "VmHWM");
    split = RssSplit(s.pid());
    if (!a.ok) error = a.error;
    s.Close();
  }
  ctx.report.Add({"memory: idle shim RSS (after initialize + one exec.run)", Mib(static_cast<double>(shim_rss)),
                  "—", "", "≤ 8 MiB", shim_rss > 0 ? Met(shim_rss <= 8LL << 20) : "n/a"});
  ctx.report.Note("memory", "shim VmRSS " + Mib(static_cast<double>(shim_rss)) + ", VmHWM " +
                                Mib(static_cast<double>(shim_hwm)) + " (" + split + ")" +
                                (error.empty() ? "" : "; " + error));
}

}  // namespace abx::bench
