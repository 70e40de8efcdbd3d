// abx-opensandbox-bench: the performance benchmark of the shim and bridge against the
// fake OpenSandbox server, with every baseline measured in the same run against the same
// fake. Prints one table (scenario, ours, baseline, ratio, target, met?) and the details
// behind it. Figures only: it exits 0 whatever they are (1 only when it cannot set up).
//
//   tools/bench [--only cold,cli,warm,stream,files,transfer,concurrency,code,shell,stdin,watch,pty,templates,pool] [--quick]
//   tools/bench --execd real [...]   the same against upstream's real execd in every sandbox
//
// tools/bench builds everything and passes the binaries; see docs/PERFORMANCE.md.

#include <signal.h>
#include <stdlib.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <set>
#include <sstream>
#include <string>

#include "bench/clock.h"
#include "bench/machine_info.h"
#include "bench/scenarios.h"

namespace {

using namespace abx::bench;

// The scenarios whose rows measure execd's side: what a run against the real execd is for.
constexpr const char* kExecdFacing = "warm,stream,files,transfer,code,shell,stdin,watch,pty";

int Usage(FILE* out) {
  std::fprintf(out,
               "usage: abx-opensandbox-bench --shim PATH --bridge PATH --fake PATH --node PATH --sdk-dir DIR\n"
               "                             [--only LIST] [--quick] [--sessions N] [--ops N]\n"
               "                             [--concurrency-budget S] [--files-rounds N] [--sse-grace-ms MS]\n"
               "                             [--keep-work-dir] [--execd-binary PATH]\n"
               "  --only LIST      comma-separated: cold,cli,warm,stream,files,transfer,concurrency,code,shell,stdin,watch,pty,templates,pool (default: all)\n"
               "  --quick          small counts and sizes, for trying a change (figures are not comparable)\n"
               "  --sessions N, --ops N   the concurrency scenario's shape (default 64 sessions × 50)\n"
               "  --concurrency-budget S  no new concurrent operation after S seconds (default 120)\n"
               "  --files-rounds N        files: each side's best of N rounds (default 2)\n"
               "  --sse-grace-ms MS       the fake's pause after a stream's last event (default 0;\n"
               "                   real execd waits ~1000: see docs/PERFORMANCE.md)\n"
               "  --keep-work-dir  keep the temp dir with the fake's, the shims' and the bridge's logs\n"
               "  --execd-binary PATH  every sandbox runs this real execd (the fake's --execd-binary; needs\n"
               "                   root); without --only, just the execd-facing scenarios:\n"
               "                   %s\n", kExecdFacing);
  return out == stderr ? 2 : 0;
}

std::string Absolute(const std::string& path) {
  char* real = realpath(path.c_str(), nullptr);
  if (!real) return path;
  std::string out = real;
  free(real);
  return out;
}

void Progress(const char* what, const Stopwatch& run) {
  std::fprintf(stderr, "bench: [%5.1f s] %s (load %s)\n", run.ElapsedS(), what, LoadAverage().c_str());
}

}  // namespace

int main(int argc, char** argv) {
  BenchOptions options;
  std::set<std::string> only;
  bool keep = false;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "%s needs a value\n", arg.c_str());
        std::exit(Usage(stderr));
      }
      return argv[++i];
    };
    if (arg == "--shim") {
      options.shim = Absolute(value());
    } else if (arg == "--bridge") {
      options.bridge = Absolute(value());
    } else if (arg == "--fake") {
      options.fake = Absolute(value());
    } else if (arg == "--node") {
      const std::string node = value();
      options.node = node.empty() ? "" : Absolute(node);
    } else if (arg == "--sdk-dir") {
      options.sdk_dir = Absolute(value());
    } else if (arg == "--only") {
      std::stringstream list(value());
      std::string item;
      while (std::getline(list, item, ',')) only.insert(item);
    } else if (arg == "--quick") {
      options.cold_runs = 10;
      options.cli_runs = 20;
      options.warm_runs = 50;
      options.stream_bytes = 32LL << 20;
      options.file_bytes = 16LL << 20;
      options.transfer_bytes = 32LL << 20;
      options.files_rounds = 1;
      options.sessions = 16;
      options.ops_per_session = 10;
      options.direct_ops_per_client = 2;
      options.template_runs = 2;
      options.snapshot_runs = 1;
    } else if (arg == "--sessions") {
      options.sessions = std::max(1, std::atoi(value().c_str()));
    } else if (arg == "--ops") {
      options.ops_per_session = std::max(1, std::atoi(value().c_str()));
    } else if (arg == "--concurrency-budget") {
      options.concurrency_budget_s = std::max(1.0, std::atof(value().c_str()));
    } else if (arg == "--files-rounds") {
      options.files_rounds = std::max(1, std::atoi(value().c_str()));
    } else if (arg == "--sse-grace-ms") {
      options.sse_grace_ms = std::max(0, std::atoi(value().c_str()));
    } else if (arg == "--execd-binary") {
      options.execd_binary = Absolute(value());
    } else if (arg == "--keep-work-dir") {
      keep = true;
    } else if (arg == "--help" || arg == "-h") {
      return Usage(stdout);
    } else {
      std::fprintf(stderr, "unknown argument %s\n", arg.c_str());
      return Usage(stderr);
    }
  }
  // An empty --node is allowed: the Node baselines are then reported as missing.
  if (options.shim.empty() || options.bridge.empty() || options.fake.empty() || options.sdk_dir.empty()) {
    return Usage(stderr);
  }
  if (!options.execd_binary.empty() && only.empty()) {
    std::stringstream list(kExecdFacing);
    std::string item;
    while (std::getline(list, item, ',')) only.insert(item);
  }
  for (const std::string& s : only) {
    static const std::set<std::string> kKnown = {"cold", "cli", "warm", "stream", "files", "concurrency", "code",
                                                  "shell", "stdin", "watch", "pty", "transfer", "templates", "pool"};
    if (!kKnown.count(s)) {
      std::fprintf(stderr, "unknown scenario %s\n", s.c_str());
      return Usage(stderr);
    }
  }
  auto wanted = [&](const char* name) { return only.empty() || only.count(name) > 0; };

  signal(SIGPIPE, SIG_IGN);  // a shim that dies mid-write must not kill the driver
  const std::string machine = MachineSummary();
  Stopwatch run;
  BenchContext ctx;
  ctx.options = options;
  std::string error;
  Progress("setting up: fake server, bridge, sandbox", run);
  if (!SetUp(ctx, &error)) {
    std::fprintf(stderr, "bench: set-up failed: %s\n", error.c_str());
    TearDown(ctx, true);
    std::fprintf(stderr, "bench: logs kept in %s\n", ctx.work_dir.c_str());
    return 1;
  }
  const IdleRss idle_start = IdleBridgeRss(ctx);
  if (wanted("cold")) Progress("cold start", run), RunColdStart(ctx);
  if (wanted("warm")) Progress("warm exec", run), RunWarmExec(ctx);
  if (wanted("cli")) Progress("one CLI command (shim and JS SDK alternating)", run), RunCliCommands(ctx);
  // Before the big transfers: what they leave in the bridge's heap would otherwise be
  // counted in the concurrency run's peak.
  if (wanted("concurrency")) Progress("concurrency", run), RunConcurrency(ctx);
  if (wanted("code")) Progress("code interpreter", run), RunCode(ctx);
  if (wanted("shell")) Progress("shell", run), RunShell(ctx);
  if (wanted("stdin")) Progress("interactive stdin", run), RunStdin(ctx);
  if (wanted("watch")) Progress("watching files", run), RunWatch(ctx);
  if (wanted("pty")) Progress("terminals", run), RunPty(ctx);
  if (wanted("templates")) Progress("templates and snapshots", run), RunTemplates(ctx);
  const IdleRss idle_middle = IdleBridgeRss(ctx);
  if (wanted("stream")) Progress("stream", run), RunStream(ctx);
  if (wanted("files")) Progress("files", run), RunFiles(ctx);
  if (wanted("transfer")) Progress("transfer", run), RunTransfer(ctx);
  // Last: its sessions configure the bridge's pool, which the next session without one
  // turns off again.
  if (wanted("pool")) Progress("warm pool", run), RunPool(ctx);
  Progress("idle memory", run);
  RunIdleMemory(ctx, {{"after set-up", idle_start},
                      {"after cold start, warm exec, CLI and concurrency", idle_middle},
                      {"after stream and files", IdleBridgeRss(ctx)}});
  const std::string load_end = LoadAverage();
  Progress("tearing down", run);
  TearDown(ctx, keep);
  if (keep) std::fprintf(stderr, "bench: logs kept in %s\n", ctx.work_dir.c_str());

  std::printf("Machine: %s\n", machine.c_str());
  std::printf("execd: %s\n", options.execd_binary.empty()
                                  ? "the fake's own (its newest profile)"
                                  : ("upstream's real binary " + options.execd_binary +
                                     ", in a bubblewrap jail per sandbox").c_str());
  std::printf("Load average at the end: %s; the run took %.0f s\n\n", load_end.c_str(), run.ElapsedS());
  ctx.report.Print(stdout);
  return 0;
}
