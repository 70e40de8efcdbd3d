#pragma once

// A stand-in for the bridge, for the shim's tests: it serves Bridge.Hello and
// EppSession.Run on a Unix socket and answers EPP lines by a small script, so each
// test can make the bridge answer, stay silent, end a session or die on cue.
//
// Answers, by method of the request line:
//   initialize      {"result":{"protocol":"EPP/1","replayed":false}}
//   test.hang       no answer
//   test.ignore_eof answered; the session then outlives the shim's half-close (it ends
//                   only when the shim goes away)
//   test.fail_call  ends the call with UNAVAILABLE (as if the bridge went away)
//   test.crash      the whole process exits 3 at once (binary mode only)
//   test.notify     a notification {"method":"test.note"} first, then the answer
//   test.flood      params.bytes of ~64 KiB notifications {"method":"test.flood"}, from
//                   a thread of its own (the session keeps reading), then the answer
//                   {"result":{"flooded":<bytes>}}
//   anything else   {"result":{"method":<method>,"replayed":<initialized by replay>,
//                               "session":<session number>,"bytes":<line length>}}
// `exit` ends the call with OK. An oversized line is answered with E8008 by the id read
// from its prefix (null when none), with `data.length`.
// Every answer carries its response_id.

#include <sys/types.h>

#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include <grpcpp/grpcpp.h>

#include "proto/bridge.grpc.pb.h"

namespace abx::testing {

class FakeBridge {
 public:
  // Serves on `socket_path` (removing a stale file first). Null on failure.
  static std::unique_ptr<FakeBridge> Start(const std::string& socket_path,
                                           const std::string& build_id);
  ~FakeBridge();

  // Stops at once: open calls end with an error, the socket is removed.
  void Kill();

  // SessionStart messages received, in order.
  std::vector<opensandbox::v1::SessionStart> starts() const;
  // Lines received (all sessions), in order.
  std::vector<std::string> lines() const;
  // Sizes of the line parts received (all sessions), in order; lines() has each line
  // whole, its parts put back in front of it.
  std::vector<size_t> line_parts() const;
  int hellos() const;
  // Bytes of test.flood lines whose write has returned.
  int64_t flood_bytes() const;
  // Waits until `count` sessions ended (half-close or exit seen), up to timeout.
  bool WaitForEndedSessions(int count, int timeout_ms) const;

  struct State;

 private:
  friend int FakeBridgeMain(int argc, char** argv);

  FakeBridge() = default;

  std::unique_ptr<State> state_;
  std::unique_ptr<grpc::Service> bridge_service_;
  std::unique_ptr<grpc::Service> epp_service_;
  std::unique_ptr<grpc::Server> server_;
  std::string socket_path_;
};

// `fake_bridge serve --socket PATH` as the shim starts it: takes the lock (exiting 0
// when another holds it), serves until killed. FAKE_BRIDGE_EXIT=<n> exits n at once,
// FAKE_BRIDGE_DELAY_MS delays before binding, FAKE_BRIDGE_BUILD_ID sets the build id.
int FakeBridgeMain(int argc, char** argv);

}  // namespace abx::testing
