#pragma once
// What every scenario shares: the binaries, the one fake server, the one sandbox, the
// bridge's socket, and the report the rows go to.

#include <sys/types.h>

#include <string>
#include <vector>

#include "bench/fake_server.h"
#include "bench/report.h"
#include "bench/shim_session.h"

namespace abx::bench {

struct BenchOptions {
  std::string shim, bridge, fake, node, sdk_dir;
  int cold_runs = 20;          // cold start samples, each side
  int cli_runs = 200;          // "one CLI command" processes, each side
  double sdk_budget_s = 40;    // ...but the SDK side stops once it spent this long
  int sdk_min_runs = 30;       // ...and has at least this many samples
  int warm_runs = 150;         // warm exec samples, each side
  long long stream_bytes = 256LL << 20;
  long long file_bytes = 64LL << 20;
  long long transfer_bytes = 256LL << 20;  // files.transfer
  long long chunk_bytes = 4LL << 20;
  int files_rounds = 2;        // files: each side's best of this many rounds
  int sessions = 64;           // concurrency: shim sessions
  int ops_per_session = 50;
  // Once this long has passed since the common start, sessions start no further
  // operation: every command costs the fake ~50 ms of CPU under concurrency, so on a busy
  // 2-core machine 3,200 of them could take many minutes. The row says how many ran.
  double concurrency_budget_s = 120;
  int direct_ops_per_client = 3;  // concurrency: the fake's own capacity, direct clients
  int sse_grace_ms = 0;        // the fake's pause after a stream's last event (execd: ~1000)
  int template_runs = 5;       // templates: creates of each kind (each waits the fake's start)
  int snapshot_runs = 5;       // templates: snapshots of 100 MiB, each side (after one of warm-up)
  // Upstream's real execd, run by the fake in every sandbox (its --execd-binary); "" = the
  // fake's own imitation.
  std::string execd_binary;
};

// The base URL a direct baseline calls execd at, from the endpoint the lifecycle API names.
// A Docker server names execd's host port followed by execd's own `/proxy/44772`, a hop
// from execd to itself that cuts streams (docs/opensandbox.md §2.18); the provider skips
// it (DirectExecdEndpoint in bridge/core/endpoint_cache.h), and so does the baseline, so that both sides
// measure execd itself.
std::string DirectExecdBase(const std::string& endpoint);

struct BenchContext {
  BenchOptions options;
  std::string work_dir;     // private temp dir (0700): HOME of the shims, socket, logs
  std::string socket_path;  // the bridge's
  std::string api_key;      // the fake's; travels only in environments, never in argv
  FakeServer fake;
  std::string sandbox_id;
  std::string execd_base;   // http://<execd endpoint> for the direct baselines: DirectExecdBase
  pid_t bridge_pid = -1;
  Report report;

  std::string LogPath(const std::string& name) const { return work_dir + "/" + name + ".log"; }

  // How abx would start the shim: its configuration in the environment, HOME private.
  ShimConfig Shim() const;

  // A shim session that answered initialize; false with `*error` otherwise.
  bool OpenSession(ShimSession* session, std::string* error) const;

  // `{"sandbox_id":"…",<extra>}`.
  std::string Params(const std::string& extra) const;

  // The bridge's `status` JSON, parsed; false when it does not answer.
  // The fake's container start time (its fault start_ms); false when it refuses.
  bool SetFakeStartDelay(int ms) const;

  // Whether the fake counts execd's requests (its own execd does; a real one is behind a
  // byte relay, which counts only connections).
  bool execd_requests_counted() const { return options.execd_binary.empty(); }

  bool BridgeStatus(long long* peak_rss_bytes, long long* upstream_connections, pid_t* pid,
                    std::string* error) const;
};

}  // namespace abx::bench
