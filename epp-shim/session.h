#pragma once

// One host session: every line of stdin goes, in order, over one EppSession.Run call to
// the bridge; every line the bridge sends back goes, in order, to stdout.
//
// One thread, one poll(2) loop over three descriptors: stdin (read), stdout (written
// without blocking, from HostOutput's buffer) and the bridge's socket (the HTTP/2
// connection of grpc_connection.h). Nothing waits on anything else, except as said here:
//
//  * The host stops reading stdout: the shim keeps what the bridge sent in its stdout
//    buffer, and past kOutputHoldBytes stops giving the bridge's send window back, so the
//    bridge (whose writes then block) stops sending once the 16 MiB window is used up.
//    Stdin is still read and forwarded meanwhile: a host that writes a request before it
//    reads the last answer never deadlocks against the shim.
//  * The bridge stops taking input (its HTTP/2 window is full): lines wait in the
//    connection's queue; past kInputQueueBytes the shim stops reading stdin until the
//    bridge takes them, and the host's writes then block.
//  * The shim's own answers (E8002 while no bridge can be reached) to a host that writes
//    and never reads: past kOutputLimitBytes stdin is no longer read either.
//  * Connecting to, or starting, the bridge blocks the loop (up to its start timeout,
//    10 s); nothing else is in flight then.
//
// The shim keeps the set of requests the host still waits for (by id). When the call
// ends (the bridge died, reset the stream, answered garbage, or ended the session),
// each of them is answered at once with E8002 (retryable), so the host never waits for an
// answer that cannot come; those answers go after every line the bridge sent before it
// ended. The next request starts a new call (and, if needed, a new bridge); if the
// session was initialized, its `initialize` line is replayed in SessionStart so the new
// bridge carries on without asking the host to initialize again. Attached commands of
// the broken call get their exec.exit from the shim (exit_code null, error E8002; see
// attached_execs.h): their streams died with it.
//
// A long line crosses while the host still writes it: each time 1 MiB more of it has
// arrived, those bytes go to the bridge as a SessionInput.line_part, and the line's end
// goes as its `line`. Without this the shim read the whole line first and only then sent
// it, and the host's write and the send took turns. Parts belong to the call they went
// on: if that call ends before the line does, the line goes whole on the next one.
//
// Local files (files.transfer): the bridge asks the shim to open, create and rename
// the host's files (local_files.h) in messages of the call; the shim answers each at
// once, in the loop. A new file not yet renamed into place is removed when the call that
// asked for it ends and when the shim leaves.
//
// Memory: large lines are served from the heap and reused (main.cc); once a second has
// passed with nothing to do after some traffic, the shim gives its free memory back
// (malloc_trim), so an idle shim holds no more than it did before the last large line.
//
// End of stdin half-closes the call (the bridge then cancels attached commands) and
// waits up to drain_timeout_ms for the bridge to end it and for stdout to take what is
// left; then the shim leaves (the call cancelled, the rest of stdout dropped, both
// logged). `exit` ends the session when the bridge ends the call after it, again after
// at most drain_timeout_ms of writing out what is left.

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>

#include "common/limits.h"
#include "common/line_reader.h"
#include "epp-shim/attached_execs.h"
#include "epp-shim/bridge_client.h"
#include "epp-shim/config_resolver.h"
#include "epp-shim/host_output.h"
#include "epp-shim/line_meta.h"
#include "epp-shim/local_files.h"

namespace abx {

class ShimSession {
 public:
  struct Options {
    // How long end of stdin (or `exit`) waits for the bridge to finish the call and for
    // stdout to take what is left.
    int drain_timeout_ms = 1500;
    // After a failed connect, requests within this window are answered at once with
    // the same error instead of each trying again.
    int reconnect_holdoff_ms = 1000;
    // Called when the bridge ended the call after `exit` (and stdout was written out);
    // the process exits in it by default. If it returns, Run() returns 0.
    std::function<void()> on_exit;
    // Resolves the configuration, once, at the first connect.
    std::function<ResolvedConfig()> resolve_config;
    std::string shim_version;
    std::string build_id;
    // Readable once the process was asked to stop (SIGTERM, SIGINT, SIGHUP; main.cc):
    // the new files of downloads are removed, then `on_stop` runs (it ends the process
    // by the same signal). -1: none.
    int stop_fd = -1;
    std::function<void()> on_stop;
  };

  // Past this much unwritten stdout, the bridge's send window is held (see above).
  static constexpr size_t kOutputHoldBytes = 1 << 20;
  // Past this much input not yet taken by the bridge, stdin is not read.
  static constexpr size_t kInputQueueBytes = 8 << 20;
  // Past this much unwritten stdout, stdin is not read either. Above what the bridge
  // alone can fill (hold + window + one message), so it only stops a host that keeps
  // writing requests the shim itself must answer and never reads the answers.
  static constexpr size_t kOutputLimitBytes = 64 << 20;

  ShimSession(BridgeClient* client, int output_fd, Options options);
  ~ShimSession();

  // Forwards every line read from `input_fd` (not owned) until its end (then drains, see
  // above), until `exit` was sent with no bridge attached, or until the bridge ended the
  // call after `exit`. Returns the process exit code (0).
  int Run(int input_fd);

 private:
  class Call;

  // Forwards one line. False when the session is over (`exit` with no bridge attached,
  // or a call that ended after `exit`).
  bool HandleLine(FramedLine line);
  // Sends what arrived of the line being read (`pending`) since the last part, once that
  // is kLinePartBytes or more and a call is open.
  void ForwardLinePart(std::string_view pending);
  // Starts a call (connecting to, or starting, the bridge). False with `*error`.
  bool StartCall(std::string* error);
  // Answers what the ended call leaves unanswered and drops it. True when the session
  // is over (the call ended after `exit`).
  bool RetireCall();
  // A SessionOutput of the current call.
  void OnBridgeOutput(std::string_view line, std::string_view response_id);
  void AnswerUnreachable(const LineMeta& meta, const std::string& error);
  // Writes out stdout up to the drain deadline; logs what is dropped.
  void FinishOutput(int64_t deadline_ms);

  BridgeClient* const client_;
  HostOutput output_;
  Options options_;

  bool config_resolved_ = false;
  ResolvedConfig config_;
  std::unique_ptr<Call> call_;
  // How many first bytes of the line being read went as parts, on call_ (0 once the call
  // that had them is retired).
  size_t parts_sent_bytes_ = 0;
  AttachedExecs attached_;
  // Local files the bridge asked for (files.transfer), answered on the call that asked.
  LocalFiles local_files_;
  int64_t last_connect_failure_ms_ = -1;
  std::string last_connect_error_;

  // Ids (compact JSON) of requests sent on the current call and not yet answered,
  // with their counts (a host may reuse an id).
  std::map<std::string, int, std::less<>> in_flight_;
  bool exit_sent_ = false;
  bool exit_acknowledged_ = false;  // the call ended after `exit`
  std::string initialize_id_;
  std::string initialize_line_;
  bool initialized_ = false;
};

}  // namespace abx
