#pragma once

// What the in-process session tests share (session_concurrency_test.cc,
// session_cancellation_test.cc): the fixture, with the fake server and the one core, that
// opens hosts with sandboxes of their own, and small helpers for their checks.

#include <functional>
#include <memory>
#include <string>

#include "tests/bridge/api/epp/in_process_host.h"
#include "tests/bridge/fake_upstream.h"

namespace abx::epp::testing {

// How long a test waits for an answer from the local fake: generous, because under
// ThreadSanitizer both the bridge code and the fake run 5-15x slower.
inline constexpr Millis kAnswerTimeout(60000);

// "1\n2\n…n\n", as `seq 1 n` prints it.
std::string SeqOutput(int n);
// `n` bytes of any value, the same for the same seed.
std::string RandomBytes(size_t n, uint32_t seed);
// "sleep 3N.<pid>1": the fake runs commands on this host, so a process listing also
// shows other tests' commands; this one is this test process's alone.
std::string UniqueSleep(int seconds);
// True once no process on this host runs `command` (within `timeout`).
bool GoneWithin(const std::string& command, Millis timeout);
// The line, or "(no answer)".
std::string Describe(const MessagePtr& message);
// Runs `body(i)` for i in [0, n) on n threads at once and waits for all of them.
void OnThreads(int n, const std::function<void(int)>& body);

class SessionTest : public bridge_test::FakeUpstreamTest {
 protected:
  // An initialized host with a sandbox of its own, created and checked; null with a
  // failure.
  std::unique_ptr<InProcessHost> HostWithSandbox(std::string* sandbox_id,
                                                 const std::string& key = kKeyA);
  // sandbox.create on `host` with `metadata_json`; the id of the Running sandbox, or ""
  // with a failure.
  std::string CreateSandbox(InProcessHost* host, const std::string& metadata_json);
  // sandbox.kill from a session of its own, which must answer killed: true.
  void KillSandbox(const std::string& sandbox_id);
};

}  // namespace abx::epp::testing
