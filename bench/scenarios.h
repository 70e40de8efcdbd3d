#pragma once
// The benchmark's scenarios. Each adds its rows (and notes) to ctx.report and never
// aborts the run: a scenario that cannot measure says so in its row.

#include <string>
#include <utility>
#include <vector>

#include "bench/bench_context.h"

namespace abx::bench {

// Work dir, fake server, the first shim (which starts the bridge), one sandbox, the
// execd endpoint, the bridge's pid. False when nothing can be measured.
bool SetUp(BenchContext& ctx, std::string* error);
// Kills the sandbox, stops the bridge (by its pid if it will not stop), the fake, and
// removes the work dir.
void TearDown(BenchContext& ctx, bool keep_work_dir);

void RunColdStart(BenchContext& ctx);    // new shim → initialize vs `node -e ''`
void RunCliCommands(BenchContext& ctx);  // 200 × (shim: initialize + exec.run true) vs the JS SDK; connection reuse
void RunWarmExec(BenchContext& ctx);     // exec.run true in one session vs direct libcurl
void RunStream(BenchContext& ctx);       // 256 MiB of stdout vs direct libcurl
void RunFiles(BenchContext& ctx);        // 64 MiB files.write / files.read vs direct upload / download
void RunTransfer(BenchContext& ctx);     // 256 MiB files.download / files.upload vs curl to and from disk
void RunConcurrency(BenchContext& ctx);  // 64 sessions × 50 exec.run vs 1 × 50; bridge peak RSS
void RunCode(BenchContext& ctx);         // code.run 1+1 vs direct POST /code; 16 contexts × 20 runs at once
void RunShell(BenchContext& ctx);        // exec.run in a shell vs direct POST /session/{id}/run
void RunStdin(BenchContext& ctx);        // a line to cat and back vs exec.run true; 1 MiB into sha256sum
void RunWatch(BenchContext& ctx);        // a change's files.event latency; 64 idle watches' cost
void RunPty(BenchContext& ctx);
void RunTemplates(BenchContext& ctx);
void RunPool(BenchContext& ctx);         // a pooled create vs the calls it makes and a cold one; RSS and idle CPU with 16    // create from a template vs from its image; snapshot of 100 MiB          // keystroke, cat 64 MiB vs a direct WebSocket; RSS with 32 terminals

// Idle RSS of the bridge (no session open) now; call after setup and at the end.
// The bridge's VmRSS with no session open: half a second after the last one closed, and
// once it has been idle long enough to give its mapped file pages back (bridge/
// memory_trimmer.h: after 5 s without a session, looked at every second).
struct IdleRss {
  long long soon = -1;
  long long settled = -1;
};
IdleRss IdleBridgeRss(BenchContext& ctx);
// Adds the idle-memory rows: bridge idle RSS (the worst of `bridge_idle`, readings taken
// at the points named), shim idle RSS.
void RunIdleMemory(BenchContext& ctx, const std::vector<std::pair<std::string, IdleRss>>& bridge_idle);

}  // namespace abx::bench
