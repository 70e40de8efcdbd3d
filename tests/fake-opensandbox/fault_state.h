#pragma once

// Fault injection, switched at run time through POST /_fake/faults (or --faults JSON at
// start) and reset with DELETE /_fake/faults. Each switch targets one failure a client
// must survive; see README.md for what each one does to which listener.

#include <cstdint>
#include <mutex>
#include <random>
#include <string>

namespace fake_opensandbox {

struct Faults {
  int64_t latency_ms = 0;                // added before every lifecycle and execd answer
  double error_rate = 0;                 // share of lifecycle answers replaced by 503
  int64_t reset_stream_after_events = 0; // execd streams cut abruptly after N events
  double garbage_body = 0;               // share of lifecycle bodies truncated (true = 1)
  bool never_running = false;            // new sandboxes stay Pending
  bool execd_down = false;               // execd answers 503 to everything
  bool silent = false;                   // lifecycle accepts and never answers
  bool kernel_dies_mid_run = false;      // a /code run's kernel is killed after its first output
  int64_t slow_interrupt_ms = 0;         // a code context's interrupt reaches its kernel this late
  int64_t pty_drop_after_bytes = 0;      // the next terminal WebSocket is dropped after N output bytes (once)
  int64_t pty_stale_hold_ms = 0;         // that drop leaves the terminal held N ms (execd's read deadline)
  bool pty_refuse_upgrade = false;       // terminal WebSockets are answered 503 instead of upgraded
  bool proxy_ws_unreachable = false;     // the server proxy's WebSocket route cannot reach execd (1011)
  int64_t pty_stall_reads_ms = 0;        // terminal WebSockets read nothing from the client for N ms after connecting
  int64_t pty_exit_overtakes_bytes = 0;  // a terminal's exit frame overtakes its last N output bytes
  int64_t download_cut_after_bytes = 0;  // every /files/download answer breaks off after N body bytes
  bool download_change_on_cut = false;   // ... and the file grows by a byte as it does
  int64_t upload_fail_after_bytes = 0;   // /files/upload stops reading after N body bytes and answers 500
  int64_t transfer_ms_per_mib = 0;       // /files/download and /files/upload move a MiB per N ms at most
  bool snapshot_fails = false;           // snapshot captures end Failed
  int64_t snapshot_capture_ms = 0;       // a snapshot stays Creating at least N ms
  int64_t start_ms = 0;                  // a new sandbox stays Pending N ms (a container's start)
  bool refuse_creates = false;           // POST /sandboxes fails as a runtime out of quota does
  int64_t proxy_internal_errors = 0;     // the next N server-proxy HTTP requests answer its 500
  int64_t gateway_clock_ahead_s = 0;     // the ingress gateway's clock runs N s ahead (signed routes expire)
  int64_t gateway_clock_at_s = 0;        // the ingress gateway's clock stands at this Unix second (0: runs)
};

// Whether the switches `json` turns on can work when the real execd runs every sandbox
// (--execd-binary): one that acts inside the fake's own execd cannot (*error says which).
bool FaultsAllowedWithRealExecd(const std::string& json, std::string* error);

class FaultState {
 public:
  Faults Get() const;
  void Reset();
  // Merges the keys present in `json` (an object) over the current faults.
  bool Update(const std::string& json, std::string* error);
  std::string ToJson() const;
  // True with probability `rate`.
  bool Roll(double rate);
  // Spends one of the proxy_internal_errors still owed; false when none is.
  bool TakeProxyInternalError();

 private:
  mutable std::mutex mutex_;
  Faults faults_;
  std::mt19937_64 rng_{0x5eed};
};

}  // namespace fake_opensandbox
