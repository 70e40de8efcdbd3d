// Finding or starting the bridge.
//
// The shim is started once per host command and must be cheap, so everything costly
// (HTTP pools, caches of sandbox endpoints) lives in one long-lived bridge per user and
// build, reached over a Unix socket. This file is the shim's side of that arrangement.
//
// Socket. One per build: <runtime dir>/abx-opensandbox/bridge-<build id 12>.sock
// (common/bridge_paths.h). A shim therefore never talks to a bridge built from other
// sources, and upgrading is not an event: the new shim starts a new bridge beside the
// old one, which serves its open sessions and exits when idle. With an explicit
// ABX_OPENSANDBOX_BRIDGE_SOCKET a bridge of another build may sit at the path; the shim
// then moves to "<path>-<build id 12>.sock" (restart reason NEW_VERSION).
//
// Handshake. The first call on every connection is Bridge.Hello, which returns the
// bridge's build id; the session's EppSession.Run then goes on the same connection. A
// socket that accepts but does not answer within the deadline is UNRESPONSIVE; one whose
// connect is refused is a STALE_SOCKET left by a dead bridge, and so is one that accepts
// and then drops the connection before answering (a bridge that is dying still has its
// listening socket for a moment); a missing one is NOT_RUNNING. Before Hello, a raw
// connect checks (SO_PEERCRED) that the listener runs as our user, and the connection
// Hello goes on is checked again.
//
// Transport. The bridge is a real gRPC server; the shim is not a grpc++ client but a
// small one of its own (grpc_connection.h: HTTP/2 from libnghttp2, the gRPC framing by
// hand; bridge_messages.h: its messages on a hand-written protobuf codec). It runs
// in the session's one thread and poll loop (session.h). What it gave: the shim no
// longer carries gRPC, protobuf and abseil (~6 MiB of its idle RSS were their pages),
// starts without their static initialisers, and spends no threads or copies between
// the socket and stdout (docs/PERFORMANCE.md has the figures).
//
// Lock. The bridge, not the shim, takes an exclusive flock on <socket>.lock before it
// binds, and holds it for life. The kernel drops a flock when its holder dies, so a
// crashed bridge never leaves a lock that blocks the next one (Bazel #11020), and the
// holder alone may unlink and rebind the socket (gRPC unlinks before binding, so a
// lock-less racer would steal a live socket: grpc #17122). Shims that race to start a
// bridge simply all spawn one: the losers find the lock taken and exit 0 at once, and
// every shim polls the socket until the winner answers. A draining or idling-out bridge
// removes its socket and then drops the lock, so a shim that meets one in between sees
// its bridge step aside with nobody answering; it then spawns again (every 200 ms) until
// the lock is free. A spawned bridge that exits non-zero, or a wait that ends (10 s),
// fails the connect with the tail of its log.
//
// Spawn. `<bridge> serve --socket PATH`, detached (setsid, stdin /dev/null, output
// appended to <socket>.log, no inherited descriptors), with the provider's
// configuration variables removed from its environment: the bridge is shared, so each
// session's configuration (secrets included) reaches it only inside that session's
// SessionStart, never through argv or the environment.
//
// Rejected alternatives:
//  * The shim binds the socket and passes the listening fd to the bridge (containerd's
//    fd 3): it makes the shim do the bridge's job of owning the path and still needs a
//    lock against racing shims.
//  * The shim takes the start lock itself before spawning (gpg-agent): with the bridge
//    holding the lock for life, a shim could not take it while a bridge lives; a
//    separate start lock buys nothing over "losers exit 0".
//  * One socket for all builds, replacing an older bridge on mismatch (Bazel's server
//    restart): it would kill sessions of other hosts still using the old bridge.
//  * Killing an UNRESPONSIVE bridge: it may be busy rather than hung, and it holds
//    other sessions; the shim reports E8002 (retryable) instead.
//
// Rejected alternatives for the transport:
//  * Keep grpc++, trimmed (gc-sections, identical code folding, static libstdc++): done
//    before, and still 8.7-9.0 MiB idle, two threads (the caller's and a reader) and a
//    copy of every line into and out of protobuf objects.
//  * grpc++'s callback or completion-queue API in one thread: still the whole library
//    and its own threads (the completion queue's poller, timers).
//  * A private protocol on the socket (plain length-prefixed lines): the smallest
//    client, but the bridge would need a second server beside its gRPC one, and tooling
//    could no longer speak to EppSession with any gRPC client. The wire stays gRPC.
//  * HTTP/2 by hand: framing is easy, HPACK and flow control are not; libnghttp2 is
//    small (about 90 KB of text, of which the shim maps what it touches), has no
//    threads or I/O of its own, and is already on every machine that has libcurl.
//  * libprotobuf-lite for the messages: 0.8 MB of text for six small messages; the
//    hand-written codec is checked against the generated classes instead
//    (//tests/epp-shim:bridge_messages_test).

#include "epp-shim/bridge_client.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>

#include "common/bridge_paths.h"
#include "common/platform.h"

extern char** environ;

namespace abx {
namespace {

constexpr char kBridgeBinaryEnv[] = "ABX_OPENSANDBOX_BRIDGE_BIN";
constexpr char kBridgeBinaryName[] = "abx-opensandbox-bridge";
constexpr int kProbeTimeoutMs = 200;
constexpr size_t kLogTailBytes = 2048;
// Poll intervals while a bridge starts: quick at first (a bridge binds in a few ms),
// then no busier than needed.
constexpr int kFirstPollMs = 2;
constexpr int kMaxPollMs = 50;
// Each Hello during start-up gets at most this long.
constexpr int kStartHelloTimeoutMs = 1000;
// A bridge we started that found the lock taken exits 0 at once. Usually a racing
// shim's bridge is about to answer; but the holder may be a bridge that is on its way
// out (idle or draining) and never answers again. When nobody answers this long after
// ours stepped aside, start another, at most kMaxRespawns times within the wait.
constexpr int kRespawnAfterMs = 200;
constexpr int kMaxRespawns = 20;

bool StartsWith(const std::string& text, const char* prefix) {
  return text.compare(0, strlen(prefix), prefix) == 0;
}

std::string LogTail(const std::string& log_path) {
  std::string tail = ReadFileTail(log_path, kLogTailBytes);
  while (!tail.empty() && tail.back() == '\n') tail.pop_back();
  return tail.empty() ? "(the log is empty)" : tail;
}

}  // namespace

const char* RestartReasonName(RestartReason reason) {
  switch (reason) {
    case RestartReason::kNewVersion: return "NEW_VERSION";
    case RestartReason::kStaleSocket: return "STALE_SOCKET";
    case RestartReason::kUnresponsive: return "UNRESPONSIVE";
    case RestartReason::kNotRunning: return "NOT_RUNNING";
  }
  return "UNKNOWN";
}

BridgeClientOptions BridgeClientOptions::FromEnvironment(const std::string& build_id) {
  BridgeClientOptions options;
  options.build_id = build_id;
  options.socket_path = ResolveSocketPath(build_id);
  const char* explicit_socket = getenv(kBridgeSocketEnv);
  options.explicit_socket = explicit_socket != nullptr && explicit_socket[0] != '\0';
  const char* binary = getenv(kBridgeBinaryEnv);
  if (binary != nullptr && binary[0] != '\0') {
    options.bridge_binary = binary;
  } else {
    const std::string dir = SelfExecutableDir();
    options.bridge_binary = (dir.empty() ? std::string(".") : dir) + "/" + kBridgeBinaryName;
  }
  return options;
}

BridgeClient::BridgeClient(BridgeClientOptions options)
    : options_(std::move(options)), socket_path_(options_.socket_path) {}

std::string BridgeClient::log_path() const { return LogPathFor(socket_path_); }

std::vector<std::string> BridgeClient::BridgeEnvironment(char** environment) {
  std::vector<std::string> kept;
  for (char** entry = environment; entry != nullptr && *entry != nullptr; ++entry) {
    const std::string variable = *entry;
    if (StartsWith(variable, "ABX_OPENSANDBOX_") &&
        !StartsWith(variable, "ABX_OPENSANDBOX_BRIDGE_")) {
      continue;
    }
    if (StartsWith(variable, "OPEN_SANDBOX_")) continue;
    kept.push_back(variable);
  }
  return kept;
}

bool BridgeClient::Hello(const std::string& socket_path, int timeout_ms,
                         BridgeConnection* connection, grpc_protocol::Status* status,
                         bool* bridge_gone) {
  *bridge_gone = false;
  const int64_t deadline = MonotonicMillis() + timeout_ms;
  std::string error;
  GrpcConnection::Options transport_options;
  transport_options.max_message_bytes = kMaxBridgeMessageBytes;
  std::unique_ptr<GrpcConnection> transport =
      GrpcConnection::Connect(socket_path, timeout_ms, transport_options, &error);
  if (transport == nullptr) {
    // Refused or gone since the probe: the listener closed.
    *bridge_gone = true;
    *status = {grpc_protocol::kUnavailable, error};
    return false;
  }
  // Checked on this very connection, not only by the probe before it: the socket may
  // have been replaced in between.
  uid_t peer_uid = 0;
  if (!PeerCredentials(transport->fd(), &peer_uid, nullptr) || peer_uid != geteuid()) {
    *status = {grpc_protocol::kPermissionDenied,
               "the socket " + socket_path + " is served by uid " + std::to_string(peer_uid) +
                   ", not by us"};
    return false;
  }
  std::string reply_bytes;
  *status = transport->CallUnary(
      kHelloMethod, EncodeHelloRequest(options_.build_id),
      static_cast<int>(std::max<int64_t>(deadline - MonotonicMillis(), 1)), &reply_bytes);
  if (!status->ok()) {
    *bridge_gone = transport->peer_gone();
    return false;
  }
  HelloReplyMessage reply;
  if (!DecodeHelloReply(reply_bytes, &reply)) {
    *status = {grpc_protocol::kInternal, "the bridge answered Hello with a malformed reply"};
    return false;
  }
  connection->transport = std::move(transport);
  connection->socket_path = socket_path;
  connection->log_path = LogPathFor(socket_path);
  connection->hello = std::move(reply);
  return true;
}

bool BridgeClient::Connect(BridgeConnection* connection, std::string* error) {
  std::string path = socket_path_;
  for (int attempt = 0; attempt < 2; ++attempt) {
    std::string other_build;
    Outcome outcome = ConnectAt(path, connection, &other_build, error);
    if (outcome == Outcome::kConnected) {
      socket_path_ = path;
      return true;
    }
    if (outcome == Outcome::kFailed) return false;
    // A bridge of another build answered.
    if (!options_.explicit_socket || attempt > 0) {
      *error = "the bridge at " + path + " is build " + other_build + ", not " +
               options_.build_id + "; see " + LogPathFor(path);
      ShimLog(*error);
      return false;
    }
    const std::string own_path = SocketPathForBuild(path, options_.build_id);
    ShimLog(std::string("restart reason ") + RestartReasonName(RestartReason::kNewVersion) +
            ": the bridge at " + path + " is build " + other_build + "; using " + own_path);
    path = own_path;
    socket_path_ = path;
  }
  return false;
}

BridgeClient::Outcome BridgeClient::ConnectAt(const std::string& socket_path,
                                              BridgeConnection* connection,
                                              std::string* other_build, std::string* error) {
  if (!CheckUnixSocketPathLength(socket_path, error)) {
    ShimLog(*error);
    return Outcome::kFailed;
  }
  if (!EnsurePrivateDir(SocketDirOf(socket_path), error)) {
    *error = "cannot use the bridge's socket directory: " + *error;
    ShimLog(*error);
    return Outcome::kFailed;
  }

  RestartReason reason;
  uid_t peer_uid = 0;
  const UnixSocketProbe probe = ProbeUnixSocket(socket_path, kProbeTimeoutMs, &peer_uid);
  switch (probe) {
    case UnixSocketProbe::kAccepting: {
      if (peer_uid != geteuid()) {
        *error = "the socket " + socket_path + " is served by uid " + std::to_string(peer_uid) +
                 ", not by us; refusing it";
        ShimLog(*error);
        return Outcome::kFailed;
      }
      grpc_protocol::Status status;
      bool bridge_gone = false;
      if (Hello(socket_path, options_.hello_timeout_ms, connection, &status, &bridge_gone)) {
        if (connection->hello.build_id == options_.build_id) return Outcome::kConnected;
        *other_build = connection->hello.build_id;
        return Outcome::kOtherBuild;
      }
      ShimLog("the bridge at " + socket_path + " did not answer Hello: " + status.message);
      // A bridge that dies as we connect still has its listening socket for a moment:
      // the probe was accepted, then the connection dropped.
      reason = bridge_gone ? RestartReason::kStaleSocket : RestartReason::kUnresponsive;
      break;
    }
    case UnixSocketProbe::kAbsent:
      reason = RestartReason::kNotRunning;
      break;
    case UnixSocketProbe::kRefused:
      reason = RestartReason::kStaleSocket;
      break;
    case UnixSocketProbe::kTimeout:
      reason = RestartReason::kUnresponsive;
      break;
    case UnixSocketProbe::kError:
    default:
      *error = "cannot connect to the bridge's socket " + socket_path +
               " (not a socket, or not ours)";
      ShimLog(*error);
      return Outcome::kFailed;
  }
  return StartAndWait(socket_path, reason, connection, other_build, error);
}

BridgeClient::Outcome BridgeClient::StartAndWait(const std::string& socket_path,
                                                 RestartReason reason,
                                                 BridgeConnection* connection,
                                                 std::string* other_build,
                                                 std::string* error) {
  const std::string log_path = LogPathFor(socket_path);
  ShimLog(std::string("restart reason ") + RestartReasonName(reason) + ": starting " +
          options_.bridge_binary + " on " + socket_path + " (log " + log_path + ")");
  const std::vector<std::string> argv = {options_.bridge_binary, "serve", "--socket",
                                         socket_path};
  const std::vector<std::string> environment = BridgeEnvironment(environ);
  pid_t pid = 0;
  std::string spawn_error;
  if (!SpawnDaemon(argv, log_path, &pid, &spawn_error, &environment)) {
    *error = "cannot start the bridge: " + spawn_error;
    ShimLog(*error);
    return Outcome::kFailed;
  }

  const int64_t deadline = MonotonicMillis() + options_.start_timeout_ms;
  int poll_ms = kFirstPollMs;
  bool child_running = true;
  int64_t respawn_at = 0;
  int respawns = 0;
  std::string last_hello_error;
  for (;;) {
    uid_t peer_uid = 0;
    const bool accepting =
        ProbeUnixSocket(socket_path, kProbeTimeoutMs, &peer_uid) == UnixSocketProbe::kAccepting;
    if (accepting && peer_uid == geteuid()) {
      const int64_t remaining = std::max<int64_t>(deadline - MonotonicMillis(), 1);
      grpc_protocol::Status status;
      bool bridge_gone = false;
      if (Hello(socket_path, static_cast<int>(std::min<int64_t>(remaining, kStartHelloTimeoutMs)),
                connection, &status, &bridge_gone)) {
        if (connection->hello.build_id == options_.build_id) return Outcome::kConnected;
        *other_build = connection->hello.build_id;
        return Outcome::kOtherBuild;
      }
      last_hello_error = status.message;
    }
    if (child_running) {
      ChildState state;
      if (WaitChild(pid, &state) && state.exited) {
        child_running = false;
        if (state.exit_code != 0 || state.term_signal != 0) {
          const std::string how = state.term_signal != 0
                                      ? "was killed by signal " + std::to_string(state.term_signal)
                                      : "exited with status " + std::to_string(state.exit_code);
          *error = "the bridge " + how + " while starting; see " + log_path;
          ShimLog(*error + "; its log ends with:\n" + LogTail(log_path));
          return Outcome::kFailed;
        }
        // Exit 0: another bridge holds the lock; wait for it (see kRespawnAfterMs).
        respawn_at = MonotonicMillis() + kRespawnAfterMs;
      }
    } else if (!accepting && respawns < kMaxRespawns && MonotonicMillis() >= respawn_at) {
      if (SpawnDaemon(argv, log_path, &pid, &spawn_error, &environment)) {
        child_running = true;
        ++respawns;
      }
    }
    const int64_t now = MonotonicMillis();
    if (now >= deadline) break;
    usleep(static_cast<useconds_t>(std::min<int64_t>(poll_ms, deadline - now)) * 1000);
    poll_ms = std::min(poll_ms * 2, kMaxPollMs);
  }
  const int wait_ms = options_.start_timeout_ms;
  *error = "no bridge answered on " + socket_path + " within " +
           (wait_ms % 1000 == 0 ? std::to_string(wait_ms / 1000) + " s"
                                : std::to_string(wait_ms) + " ms") +
           "; see " + log_path;
  ShimLog(*error + (last_hello_error.empty() ? "" : " (last Hello: " + last_hello_error + ")") +
          "; its log ends with:\n" + LogTail(log_path));
  return Outcome::kFailed;
}

}  // namespace abx
