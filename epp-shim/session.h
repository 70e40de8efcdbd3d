#pragma once

// One host session: every line of stdin goes, in order, over one EppSession.Run call to
// the bridge; every line the bridge sends back goes, in order, to stdout.
//
// Threads: the caller's thread reads stdin and writes to the call; one reader thread per
// call reads from it and writes stdout. Nothing else writes stdout while a call is open.
//
// The shim keeps the set of requests the host still waits for (by id). When the call
// breaks (the bridge died), each of them is answered at once with E8002 (retryable), so
// the host never waits for an answer that cannot come. The next request starts a new
// call (and, if needed, a new bridge); if the session was initialized, its `initialize`
// line is replayed in SessionStart so the new bridge carries on without asking the host
// to initialize again. Attached commands of the broken call get their exec.exit from the
// shim (exit_code null, error E8002; see attached_execs.h): their streams died with it.

#include <condition_variable>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "common/line_reader.h"
#include "epp-shim/attached_execs.h"
#include "epp-shim/bridge_client.h"
#include "epp-shim/config_resolver.h"
#include "epp-shim/line_meta.h"
#include "proto/bridge.grpc.pb.h"

namespace abx {

// Writes whole lines to a descriptor, one write per line, from any thread. After the
// reader goes away (EPIPE) further lines are dropped: the host can no longer read them.
class LineWriter {
 public:
  explicit LineWriter(int fd) : fd_(fd) {}
  // Appends '\n' to `*line` and writes it.
  void WriteLine(std::string* line);

 private:
  std::mutex mu_;
  const int fd_;
  bool broken_ = false;
};

class ShimSession {
 public:
  struct Options {
    // How long end of stdin waits for the bridge to finish the call.
    int drain_timeout_ms = 1500;
    // After a failed connect, requests within this window are answered at once with
    // the same error instead of each trying again.
    int reconnect_holdoff_ms = 1000;
    // Called when the bridge ended the call after `exit`; exits the process by default.
    std::function<void()> on_exit;
    // Resolves the configuration, once, at the first connect.
    std::function<ResolvedConfig()> resolve_config;
    std::string shim_version;
    std::string build_id;
  };

  ShimSession(BridgeClient* client, int output_fd, Options options);
  ~ShimSession();

  // Forwards every line of `input` until its end (then waits for the bridge to finish
  // the call, at most drain_timeout_ms) or until `exit` was sent with no bridge
  // attached. Returns the process exit code (0).
  int Run(LineReader* input);

 private:
  struct Call;

  // Forwards one line. False when the session is over (`exit` with no bridge attached).
  bool HandleLine(FramedLine line);
  // Starts a call (connecting to, or starting, the bridge). False with `*error`.
  bool StartCall(std::string* error);
  // Joins the reader of an ended call and drops it. Caller's thread only.
  void RetireCall();
  bool CallEnded();
  void ReadOutputs(Call* call);
  void AnswerUnreachable(const LineMeta& meta, const std::string& error);

  BridgeClient* const client_;
  LineWriter output_;
  Options options_;

  bool config_resolved_ = false;
  ResolvedConfig config_;
  std::unique_ptr<Call> call_;  // caller's thread only
  AttachedExecs attached_;
  int64_t last_connect_failure_ms_ = -1;
  std::string last_connect_error_;

  std::mutex mu_;
  std::condition_variable call_ended_cv_;
  // Ids (compact JSON) of requests sent on the current call and not yet answered,
  // with their counts (a host may reuse an id).
  std::map<std::string, int> in_flight_;
  bool exit_sent_ = false;
  std::string initialize_id_;
  std::string initialize_line_;
  bool initialized_ = false;
};

}  // namespace abx
