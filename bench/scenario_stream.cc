// Stream: a command writing 256 MiB to stdout in 1 KiB lines. Ours: exec.start, bytes/s
// of exec.output data as this host reads the shim's stdout, until exec.exit. Baseline:
// the direct libcurl client reading the same SSE stream from execd to its end. Two runs
// each, alternated; the better of each side counts (noise on a shared machine only ever
// slows a run down).
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "bench/clock.h"
#include "bench/cpu_meter.h"
#include "bench/execd_direct.h"
#include "bench/notification_reader.h"
#include "bench/scenarios.h"
#include "bench/stats.h"

namespace abx::bench {
namespace {

struct StreamRun {
  CpuUsage cpu;
  bool ok = false;
  std::string error;
  double seconds = 0;
  long long bytes = 0;
  long long notifications = 0;
};

StreamRun StreamThroughShim(BenchContext& ctx, const std::string& command, long long* shim_peak_rss,
                            long long* bridge_peak_rss) {
  StreamRun run;
  ShimSession s;
  if (!ctx.OpenSession(&s, &run.error)) return run;
  ResetPeakRss(ctx.bridge_pid);
  bool exited = false;
  int exit_code = -1;
  auto on_line = [&](char* line, size_t) {
    const NotificationFacts facts = ReadNotification(line);
    if (facts.kind == NotificationFacts::Kind::kOutput) {
      run.bytes += static_cast<long long>(facts.data_bytes);
      ++run.notifications;
    } else if (facts.kind == NotificationFacts::Kind::kExit) {
      exited = true;
      if (facts.has_exit_code) exit_code = facts.exit_code;
    }
  };
  const CpuUsage c0 = ReadCpu(ctx.bridge_pid, ctx.fake.pid());
  Stopwatch t;
  const int64_t id = s.Send("exec.start", ctx.Params("\"command\":\"" + command + "\""));
  Answer started = s.Await(id, 30000, on_line);
  if (!started.ok) {
    run.error = "exec.start: " + started.error;
    return run;
  }
  while (!exited) {
    char* line = nullptr;
    size_t size = 0;
    if (!s.reader().Next(&line, &size, 120000)) {
      run.error = "the shim's output ended before exec.exit";
      return run;
    }
    on_line(line, size);
  }
  run.seconds = t.ElapsedS();
  *shim_peak_rss = ProcStatusBytes(s.pid(), "VmHWM");
  *bridge_peak_rss = ProcStatusBytes(ctx.bridge_pid, "VmHWM");
  s.Close();
  run.cpu = ReadCpu(ctx.bridge_pid, ctx.fake.pid()) - c0;
  run.ok = exit_code == 0;
  if (!run.ok) run.error = "exec.exit exit_code " + std::to_string(exit_code);
  return run;
}

StreamRun StreamDirect(BenchContext& ctx, const std::string& command) {
  StreamRun run;
  DirectClient direct;
  const CpuUsage c0 = ReadCpu(ctx.bridge_pid, ctx.fake.pid());
  Stopwatch t;
  SseRun r = RunCommandDirect(direct, ctx.execd_base, command);
  run.seconds = t.ElapsedS();
  run.cpu = ReadCpu(ctx.bridge_pid, ctx.fake.pid()) - c0;
  run.bytes = static_cast<long long>(r.stream_bytes);
  run.ok = r.ok && r.completed;
  run.error = r.ok ? (r.completed ? "" : "the command failed") : r.error;
  return run;
}

// The command itself, straight into /dev/null on this host: what the pipe can do.
double LocalCommandSeconds(const std::string& command) {
  Stopwatch t;
  const std::string shell = "bash -c '" + command + " > /dev/null' 2>/dev/null";
  if (std::system(shell.c_str()) != 0) return -1;
  return t.ElapsedS();
}

}  // namespace

void RunStream(BenchContext& ctx) {
  const long long total = ctx.options.stream_bytes;
  // 1023 zeros and a newline per line; `head` cuts at exactly `total` bytes.
  const std::string command = "yes $(printf %01023d 0) | head -c " + std::to_string(total);
  const double local_s = LocalCommandSeconds(command);

  StreamRun best_ours, best_direct;
  long long shim_peak = -1, bridge_peak = -1;
  std::vector<std::string> runs_text;
  for (int round = 0; round < 2; ++round) {
    StreamRun d = StreamDirect(ctx, command);
    long long shim_rss = -1, bridge_rss = -1;
    StreamRun o = StreamThroughShim(ctx, command, &shim_rss, &bridge_rss);
    shim_peak = std::max(shim_peak, shim_rss);
    bridge_peak = std::max(bridge_peak, bridge_rss);
    char text[240];
    std::snprintf(text, sizeof text, "round %d: shim %.2f s (%s; %s), direct %.2f s (%s; %s)", round + 1,
                  o.seconds, o.ok ? MiBps(static_cast<double>(o.bytes) / o.seconds).c_str() : o.error.c_str(),
                  o.cpu.Text().c_str(), d.seconds,
                  d.ok ? MiBps(static_cast<double>(total) / d.seconds).c_str() : d.error.c_str(),
                  d.cpu.Text().c_str());
    runs_text.push_back(text);
    if (o.ok && o.bytes != total) {
      o.ok = false;
      o.error = "the host received " + std::to_string(o.bytes) + " bytes, not " + std::to_string(total);
    }
    if (o.ok && (!best_ours.ok || o.seconds < best_ours.seconds)) best_ours = o;
    if (!o.ok && !best_ours.ok) best_ours.error = o.error;
    if (d.ok && (!best_direct.ok || d.seconds < best_direct.seconds)) best_direct = d;
    if (!d.ok && !best_direct.ok) best_direct.error = d.error;
  }

  const double ours_bps = best_ours.ok ? static_cast<double>(total) / best_ours.seconds : 0;
  const double direct_bps = best_direct.ok ? static_cast<double>(total) / best_direct.seconds : 0;
  Row row{"stream: exec.start writing " + Mib(static_cast<double>(total)) + " to stdout, host reads the shim",
          best_ours.ok ? MiBps(ours_bps) : "failed: " + best_ours.error,
          best_direct.ok ? MiBps(direct_bps) + " (libcurl SSE)" : "failed: " + best_direct.error, "", "≥ 0.5×",
          "n/a"};
  if (best_ours.ok && best_direct.ok) {
    row.ratio = Times(ours_bps / direct_bps);
    row.met = Met(ours_bps / direct_bps >= 0.5);
  }
  ctx.report.Add(row);
  std::string note;
  for (const std::string& r : runs_text) note += r + "; ";
  note += "the same command into /dev/null on this host: " +
          (local_s > 0 ? MiBps(static_cast<double>(total) / local_s) : std::string("failed")) +
          "; SSE bytes per payload byte " +
          (best_direct.ok ? std::to_string(static_cast<double>(best_direct.bytes) / static_cast<double>(total))
                          : std::string("?")) +
          "; exec.output notifications " + std::to_string(best_ours.notifications) + "; shim peak RSS " +
          Mib(static_cast<double>(shim_peak)) + ", bridge peak RSS " + Mib(static_cast<double>(bridge_peak));
  ctx.report.Note("stream", note);
}

}  // namespace abx::bench
