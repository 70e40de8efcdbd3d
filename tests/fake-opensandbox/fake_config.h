#pragma once

// Everything the command line (flags.h) can set.

#include <cstdint>
#include <string>
#include <vector>

namespace fake_opensandbox {

// execd's bash sessions by version: none before 1.0.8; 1.0.8's run request named the
// script `code` (and its timeout `timeout_ms`); `command` and `timeout` from 1.0.9.
enum class SessionApi { kNone, kCode, kCommand };

// execd's terminals by version: none before 1.0.10; takeover and the `command` field
// from 1.0.19 (an older execd ignores both).
enum class PtyApi { kNone, kBasic, kFull };

enum class Runtime { kDocker, kKubernetes };

struct FakeConfig {
  int port = 0;                         // 0: any free port
  std::string api_key;                  // empty: no lifecycle auth
  std::vector<std::string> more_api_keys;  // also accepted (--api-key given again)
  std::string execd_version = "1.0.19";
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
};

// execd >= 1.0.17 sends blank lines as "\n"; older versions drop them.
bool ExecdKeepsBlankLines(const std::string& version);
// Which bash-session API an execd version serves (docs/opensandbox.md §2.15).
SessionApi ExecdSessionApi(const std::string& version);
PtyApi ExecdPtyApi(const std::string& version);

}  // namespace fake_opensandbox
