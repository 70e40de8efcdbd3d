#pragma once

// Everything the command line (flags.h) can set.

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace fake_opensandbox {

// execd's bash sessions by version: none before 1.0.8; 1.0.8's run request named the
// script `code` (and its timeout `timeout_ms`); `command` and `timeout` from 1.0.9.
enum class SessionApi { kNone, kCode, kCommand };

// execd's terminals by version: none before 1.0.10; takeover and the `command` field
// from 1.0.19 (an older execd ignores both).
enum class PtyApi { kNone, kBasic, kFull };

enum class Runtime { kDocker, kKubernetes };

// How a Kubernetes server in ingress gateway mode names a sandbox's port
// (ingress.gateway.route.mode, ingress_gateway.h); kNone: ingress.mode = direct.
enum class IngressRouteMode { kNone, kWildcard, kUri, kHeader };

// One of ingress.secure_access's signing keys: a one-character id and its secret (the
// decoded bytes of its base64).
struct SigningKey {
  char id = 0;
  std::string secret;
};

struct FakeConfig {
  int port = 0;                         // 0: any free port
  std::string api_key;                  // empty: no lifecycle auth
  std::vector<std::string> more_api_keys;  // also accepted (--api-key given again)
  std::string execd_version = "1.0.19";
  // The egress sidecar of a sandbox created with a networkPolicy (egress_sidecar.h).
  std::string egress_version = "1.1.0";
  std::string egress_mode = "dns";
  int64_t egress_max_rules = 4096;
  int64_t clock_skew_s = 0;
  Runtime runtime = Runtime::kDocker;
  int64_t pending_polls = 0;            // GETs a new sandbox stays Pending for
  int64_t execd_ready_after = 2;        // failing /ping calls per sandbox
  std::string execd_token;              // empty: execd needs no token
  int64_t max_timeout_s = 86400;
  std::string root_dir;                 // empty: a fresh temp dir, removed on exit
  int keep_alive_timeout_s = 5;         // lifecycle listener (uvicorn's default)
  int64_t sse_grace_ms = 1000;          // execd's EXECD_API_GRACE_SHUTDOWN
  int64_t k8s_transition_ms = 500;      // Pausing->Paused, Resuming->Running delay
  std::string faults_json;              // initial faults, same JSON as POST /_fake/faults
  bool exit_on_stdin_eof = false;
  bool snapshots = true;                // false: a server whose runtime has no snapshots (501)
  std::vector<std::string> allowed_host_paths;  // storage.allowed_host_paths; empty: none
  std::vector<std::string> programs_left_out;   // --without-program: no image has these
  std::vector<std::pair<std::string, std::string>> pools;  // Kubernetes Pools: (name, image)
  // --ingress-gateway: the Kubernetes server's ingress gateway and its route mode; the
  // server and the gateway share the secure_access keys, and the server signs with the
  // active one (empty: no secure_access, no signed routes).
  IngressRouteMode ingress_route_mode = IngressRouteMode::kNone;
  std::vector<SigningKey> signing_keys;
  char active_signing_key = 0;
  // false (--no-signed-routes): a server before 0.1.13, which ignores ?expires=.
  bool signed_routes = true;
  // Upstream's real execd in every sandbox (real_execd.h) instead of the fake's own;
  // empty: the fake's. The bootstrap script defaults to bootstrap.sh beside the binary.
  std::string execd_binary;
  std::string execd_bootstrap;
  // The fake's own binary, for its `jail` subcommand: this program unless set (a test
  // that runs the fake in its own process names the binary).
  std::string self_binary;
};

// What one execd release does where releases differ (docs/opensandbox.md, "execd
// releases"; each field names the upstream commit that changed it). Every execd route
// reads the release from here, so `--execd-version` plays the whole release.
struct ExecdRelease {
  bool keep_blank_lines = true;        // 1.0.17: blank lines sent as "\n", dropped before
  SessionApi session_api = SessionApi::kCommand;
  PtyApi pty_api = PtyApi::kFull;
  // 1.0.19 (987154ee): POST /directories leaves a directory that exists as it is; before,
  // MakeDir ran MkdirAll and then always ChmodFile (chmod to the mode, chown as below).
  bool mkdir_leaves_existing = true;
  // 1.0.19 (c6332b40): SetFileOwnership chowns only to what the request names, and an
  // unknown user or group is an error; before, both empty or both unknown meant a chown
  // to execd's own uid:gid, and an unknown name was only logged.
  bool chown_only_named = true;
  // 1.0.19 (cdd490dc, 9aad0a75): /files/info and /files/mv of a missing path answer 404
  // FILE_NOT_FOUND; before, 500 RUNTIME_ERROR (the error was not wrapped).
  bool missing_path_404 = true;
  // 1.0.19 (83beafec, 1505483a): GET /directories/list exists; before, gin's plain 404.
  bool directory_list = true;
  // 1.0.19 (83beafec): /files/info and search entries have a `type` and describe a symlink
  // itself (lstat); before, no `type` and what a symlink leads to (os.Stat).
  bool file_info_type = true;
  // 1.0.17 (31484053): a streamed run refused before its first event (/code, a bash
  // session's run) is a 500 JSON answer; before, the event stream's headers were out
  // already and the error object is its only line, in an HTTP 200 answer.
  bool deferred_stream_headers = true;
  // 1.0.18 (27726236): DELETE /command signals the command's whole process group; before,
  // only its leader (bash), so what bash started outlives it.
  bool interrupt_kills_group = true;
};

// The release `version` ("1.0.18", "v1.0.8") plays; a version between two known ones
// behaves as the older of them.
ExecdRelease ReleaseOf(const std::string& version);

}  // namespace fake_opensandbox
