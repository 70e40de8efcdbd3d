#include "bridge/core/exec/exec.h"

#include <chrono>
#include <mutex>
#include <condition_variable>
#include <cstdlib>
#include <memory>
#include <thread>

#include "bridge/base/json.h"
#include "bridge/base/log.h"
#include "bridge/base/time_util.h"
#include "bridge/base/utf8.h"
#include "bridge/core/bridge_core.h"
#include "bridge/core/exec/shells.h"
#include "bridge/core/exec/stdin_pipe_script.h"
#include "bridge/core/random_hex.h"
#include "bridge/core/shell_quote.h"

namespace abx::core {
namespace {

// execd pings every 3 s while a command runs; this much silence means it is gone.
constexpr int64_t kStreamIdleTimeoutMs = 20000;
// After a cancel, how long the interrupted stream may take to deliver its end.
constexpr auto kCancelGrace = std::chrono::seconds(6);

bool ParseUint(const std::string& text, uint32_t* out) {
  if (text.empty() || text.size() > 10) return false;
  uint64_t v = 0;
  for (char c : text) {
    if (c < '0' || c > '9') return false;
    v = v * 10 + static_cast<uint64_t>(c - '0');
  }
  if (v > 0xffffffffULL) return false;
  *out = static_cast<uint32_t>(v);
  return true;
}

std::string SignalFromTraceback(const std::vector<std::string>& traceback) {
  for (const std::string& line : traceback) {
    if (line.find("signal: killed") != std::string::npos) return "SIGKILL";
    if (line.find("signal: terminated") != std::string::npos) return "SIGTERM";
    if (line.find("signal: interrupt") != std::string::npos) return "SIGINT";
    if (line.find("signal: hangup") != std::string::npos) return "SIGHUP";
    if (line.find("signal: ") != std::string::npos) return "SIGKILL";
  }
  return "";
}

// Between a command's stream and the work a cancel starts (an interrupt at execd, and
// abandoning the stream if execd cannot end it), which may outlive the Run call: shared.
struct CancelWatch {
  CancelToken abort;  // ends the stream from our side
  std::mutex mu;
  bool done = false;  // guarded by mu: the stream ended

  void MarkDone() {
    std::lock_guard<std::mutex> lock(mu);
    done = true;
  }
  bool Done() {
    std::lock_guard<std::mutex> lock(mu);
    return done;
  }
};

// Renews the lease of a stdin pipe's holder (stdin_pipe_script.h): a ping every third of
// it while the pipe is open, at a fixed rate, each given a third of the lease at most (it
// holds a background thread meanwhile). Held by the core's timer, not by a thread; a ping
// that fails is not retried, the next one comes in time.
void KeepStdinLease(BridgeCore* core, EndpointCache* upstream, opensandbox::ExecdClient execd,
                    const std::string& exec_id, int holder_pid, std::chrono::steady_clock::time_point at) {
  core->RunInBackgroundAt(at, [core, upstream, execd, exec_id, holder_pid, at]() mutable {
    if (core->Runner().stopping() || !upstream->stdin_pipes().Open(exec_id)) return;
    const auto period = std::chrono::seconds(core->sandbox_lease_seconds()) / 3;
    execd.WriteToPipe(StdinEofPath(holder_pid), kStdinPingLine, nullptr,
                      std::chrono::duration_cast<std::chrono::milliseconds>(period).count());
    KeepStdinLease(core, upstream, execd, exec_id, holder_pid, std::max(at + period, std::chrono::steady_clock::now()));
  });
}

}  // namespace

std::string CommandBody(const std::string& command, const std::string& cwd, bool background,
                        std::optional<int64_t> timeout_ms, std::optional<uint32_t> uid,
                        std::optional<uint32_t> gid, const std::map<std::string, std::string>& env) {
  std::string body = "{\"command\":" + json::Quote(command);
  if (!cwd.empty()) body += ",\"cwd\":" + json::Quote(cwd);
  body += std::string(",\"background\":") + (background ? "true" : "false");
  if (timeout_ms && *timeout_ms > 0) body += ",\"timeout\":" + std::to_string(*timeout_ms);
  if (uid) body += ",\"uid\":" + std::to_string(*uid);
  if (gid) body += ",\"gid\":" + std::to_string(*gid);
  if (!env.empty()) body += ",\"envs\":" + json::ObjectOfStrings(env);
  return body + "}";
}

Result<ExecSpec> ValidateExec(ExecRequest request) {
  if (request.sandbox_id.empty()) return InvalidParams("sandbox_id", "sandbox_id is required");
  if (request.argv.has_value() == request.command.has_value()) {
    return InvalidParams(request.argv ? "command" : "argv",
                         "exactly one of argv or command is required");
  }
  ExecSpec spec;
  if (request.argv) {
    if (request.argv->empty()) return InvalidParams("argv", "argv must not be empty");
    for (const std::string& word : *request.argv) {
      if (word.find('\0') != std::string::npos) {
        return InvalidParams("argv", "argv words cannot hold NUL characters");
      }
    }
    spec.command = ShellJoin(*request.argv);
  } else {
    if (request.command->find_first_not_of(" \t\r\n") == std::string::npos) {
      return InvalidParams("command", "command must not be blank");
    }
    spec.command = std::move(*request.command);
  }
  if (request.timeout_s && !(*request.timeout_s > 0)) {
    return InvalidParams(request.timeout_field,
                         std::string(request.timeout_field) + " must be positive");
  }
  if (request.stdin_stream && (request.stdin_data || request.detached)) {
    return InvalidParams("stdin_stream", std::string("stdin_stream cannot be used with ") +
                                             (request.stdin_data ? "stdin" : "detached") +
                                             ": the command's stdin is the stream, written by process.stdin "
                                             "while the command is attached");
  }
  if (!request.shell_id.empty()) {
    const char* refused = !request.env.empty()       ? "env"
                          : !request.user.empty()    ? "user"
                          : request.stdin_data       ? "stdin"
                          : request.stdin_stream     ? "stdin_stream"
                          : request.detached         ? "detached"
                                                     : nullptr;
    if (refused) {
      Error e = MakeError(ErrorCode::kUnsupported,
                          std::string(refused) + " cannot be used with shell_id: a shell runs its commands "
                                                 "as its own user, with its own environment and no stdin, "
                                                 "attached");
      e.field = refused;
      return e;
    }
  }
  spec.shell_id = std::move(request.shell_id);
  spec.sandbox_id = std::move(request.sandbox_id);
  spec.env = std::move(request.env);
  spec.cwd = std::move(request.cwd);
  spec.user = std::move(request.user);
  spec.stdin_data = std::move(request.stdin_data);
  spec.stdin_stream = request.stdin_stream;
  spec.timeout_s = request.timeout_s;
  spec.detached = request.detached;
  return spec;
}

Result<std::pair<uint32_t, std::optional<uint32_t>>> Exec::ResolveUser(opensandbox::ExecdClient& execd,
                                                                      const std::string& user,
                                                                      CancelToken* cancel) {
  uint32_t uid = 0;
  if (ParseUint(user, &uid)) return std::make_pair(uid, std::optional<uint32_t>());
  // A name: ask the sandbox's own passwd, where the name means something.
  std::string out;
  std::optional<int> code;
  Status st = execd.RunCommand(
      CommandBody("id -u -- " + ShellQuote(user) + " && id -g -- " + ShellQuote(user), "", false,
                  10000, std::nullopt, std::nullopt, {}),
      cancel, kStreamIdleTimeoutMs,
      [&](const opensandbox::ExecdEvent& e) {
        if (e.type == "stdout") out += e.text + "\n";
        if (e.type == "execution_complete") code = 0;
        if (e.type == "error") code = std::atoi(e.error_value().c_str());
        return true;
      },
      [] {});
  if (!st.ok()) return st.error().Within("resolve user " + user);
  uint32_t gid = 0;
  const size_t nl = out.find('\n');
  if (code != 0 || nl == std::string::npos || !ParseUint(out.substr(0, nl), &uid) ||
      !ParseUint(out.substr(nl + 1, out.find('\n', nl + 1) - nl - 1), &gid)) {
    return InvalidParams("user", "user " + user + " does not exist in the sandbox");
  }
  return std::make_pair(uid, std::optional<uint32_t>(gid));
}

Status Exec::Run(const ExecSpec& spec, CancelToken* cancel, ExecSink* sink) {
  if (!spec.shell_id.empty()) return Shells(core_, upstream_, config_).Run(spec, cancel, sink);
  auto execd = upstream_->Execd(spec.sandbox_id, *config_, cancel);
  if (!execd.ok()) return execd.error();

  std::optional<uint32_t> uid, gid;
  if (!spec.user.empty()) {
    auto ids = ResolveUser(*execd, spec.user, cancel);
    if (!ids.ok()) return ids.error();
    uid = ids->first;
    gid = ids->second;
  }

  std::string command = spec.command;
  std::string stdin_path;
  if (spec.stdin_data) {
    // execd has no stdin: the data goes to a private file first; the command opens it as
    // its stdin and removes it before it runs anything else.
    stdin_path = "/tmp/.abx-stdin-" + RandomHex(24);
    Status up = execd->Upload(stdin_path, *spec.stdin_data, uid ? 0644 : 0600, cancel);
    if (!up.ok()) return up.error().Within("upload stdin");
    command = "{ rm -f -- " + ShellQuote(stdin_path) + "; " + command + "\n} < " +
              ShellQuote(stdin_path);
  }

  std::optional<int64_t> timeout_ms;
  if (spec.timeout_s && *spec.timeout_s > 0) {
    timeout_ms = static_cast<int64_t>(*spec.timeout_s * 1000);
  }
  // The tag lets process.list tell which listed process belongs to which exec_id.
  const std::string tag = RandomHex(16);
  // A stdin stream: the command runs inside the wrapper that makes its pipe, whose first
  // stderr line names the pipe's holder and is not the command's output.
  StdinPipes& pipes = upstream_->stdin_pipes();
  bool pipe_announced = !spec.stdin_stream;
  if (spec.stdin_stream) command = StdinPipeCommand(command, tag, core_->sandbox_lease_seconds());
  std::map<std::string, std::string> env = spec.env;
  env["ABX_EXEC_TAG"] = tag;
  const std::string body = CommandBody(command, spec.cwd, spec.detached, timeout_ms, uid, gid, env);

  BridgeCore::StreamLease lease(core_);
  auto watch = std::make_shared<CancelWatch>();
  OutputAssembler assembler;
  std::string exec_id;
  bool started = false;
  ExecExit exit;
  bool ended = false;
  const int64_t start_ms = NowMillis();

  auto flush = [&] {
    for (OutputChunk& chunk : assembler.Take()) {
      sink->OnOutput(chunk);
      assembler.Recycle(std::move(chunk.data));
    }
  };
  Status st = execd->RunCommand(
      body, &watch->abort, kStreamIdleTimeoutMs,
      [&](const opensandbox::ExecdEvent& e) {
        if (e.type == "init") {
          if (started) return true;
          exec_id = e.text;
          started = true;
          upstream_->RememberExec(spec.sandbox_id, tag, exec_id);
          if (spec.stdin_stream) pipes.Add(spec.sandbox_id, exec_id);
          // A detached command's id is given out once execd knows it (below).
          if (!spec.detached) sink->OnStarted(exec_id);
          if (!spec.detached) {
            // Cancelling interrupts the command at execd; its stream then ends by
            // itself with the signal's error event. If execd cannot be reached, the
            // stream is abandoned after a grace period instead of hanging.
            // The interrupt may outlive this request (a cancel as the session ends):
            // it runs as the core's own background work, which the core waits for.
            opensandbox::ExecdClient interrupter = *execd;
            BridgeCore* core = core_;
            // The grace is counted from the interrupt's answer, and no later than from
            // its deadline however long the interrupt waited for a thread.
            cancel->OnCancel([watch, interrupter, exec_id, core]() mutable {
              if (watch->Done()) return;  // the command already ended
              auto abandon = [watch] {
                if (!watch->Done()) watch->abort.Cancel();
              };
              core->RunInBackgroundAt(std::chrono::steady_clock::now() +
                                          std::chrono::milliseconds(
                                              interrupter.interrupt_timeout_ms()) +
                                          kCancelGrace,
                                      abandon);
              core->RunInBackground([interrupter, exec_id, core, abandon]() mutable {
                interrupter.Interrupt(exec_id, nullptr);
                core->RunInBackgroundAt(std::chrono::steady_clock::now() + kCancelGrace,
                                        abandon);
              });
            });
          }
        } else if (e.type == "stderr" && !pipe_announced && started) {
          pipe_announced = true;
          if (auto holder = StdinPipeHolder(e.text, tag)) {
            pipes.SetHolder(exec_id, *holder);
            KeepStdinLease(core_, upstream_, *execd, exec_id, *holder,
                           std::chrono::steady_clock::now() + std::chrono::seconds(core_->sandbox_lease_seconds()) / 3);
          } else {
            // The wrapper could not make the pipe: what it said is the command's stderr.
            pipes.SetFailed(exec_id, e.text);
            assembler.AddLine(OutputStream::kStderr, e.text);
          }
        } else if (e.type == "stdout" || e.type == "stderr") {
          assembler.AddLine(e.type == "stdout" ? OutputStream::kStdout : OutputStream::kStderr,
                            e.text);
        } else if (e.type == "execution_complete") {
          ended = true;
          if (!spec.detached) exit.exit_code = 0;
          // The ~1 s grace before execd ends the stream is not worth waiting for; the
          // HTTP client reads it out in the background and keeps the connection.
          return false;
        } else if (e.type == "error") {
          ended = true;
          uint32_t code = 0;
          const std::string& v = e.error_value();
          if (v == "-1") {
            exit.signal = SignalFromTraceback(e.traceback());
            if (exit.signal.empty()) exit.signal = "SIGKILL";
          } else if (!v.empty() && v[0] != '-' && ParseUint(v, &code)) {
            exit.exit_code = static_cast<int>(code);
          } else {
            // A start failure: execd reports the OS error text instead of a code.
            exit.error = MakeError(ErrorCode::kUpstream, "the command did not start: " + v);
          }
          return false;
        }
        return true;
      },
      flush);
  watch->MarkDone();
  flush();
  if (started && spec.stdin_stream) {
    pipes.SetEnded(exec_id);
    // A stream that broke leaves the command running with a stdin nobody may write to
    // any more (and a cancel would no longer reach it): it is interrupted at execd.
    if (!ended) {
      opensandbox::ExecdClient interrupter = *execd;
      core_->RunInBackground([interrupter, exec_id]() mutable { interrupter.Interrupt(exec_id, nullptr); });
    }
  }
  // An attached command is over: process.list has nothing left to name by it.
  if (started && !spec.detached) upstream_->ForgetExec(spec.sandbox_id, tag);

  if (!started) {
    if (!stdin_path.empty()) execd->RemoveFile(stdin_path, nullptr);
    if (!st.ok()) return st.error().Within("start command");
    return MakeError(ErrorCode::kUpstream, "start command: execd's stream held no command id");
  }
  if (spec.detached) {
    AwaitRegistered(*execd, exec_id, cancel);
    sink->OnStarted(exec_id);
    return OkStatus();
  }

  exit.cancelled = cancel->cancelled();
  if (exit.cancelled) exit.exit_code.reset();
  if (timeout_ms && !exit.cancelled && !exit.exit_code && !exit.signal.empty() &&
      NowMillis() - start_ms >= *timeout_ms) {
    exit.timed_out = true;
  }
  if (!ended) {
    exit.exit_code.reset();
    if (exit.cancelled) {
      exit.signal = "SIGKILL";
    } else {
      Error broke = st.ok() ? MakeError(ErrorCode::kUnreachable,
                                        "execd closed the output stream before the command ended")
                            : st.error();
      exit.error = broke.Within("command " + exec_id);
    }
  }
  sink->OnExit(exit);
  return OkStatus();
}

void Exec::AwaitRegistered(opensandbox::ExecdClient& execd, const std::string& exec_id,
                           CancelToken* cancel) {
  // execd sends a background command's id (its `init` event) before it records the
  // command: it starts the process, then records it from another goroutine
  // (runBackgroundCommand, every release). A status, logs or kill call that comes first is
  // answered 404 "command not found" (docs/opensandbox.md, "Seen on the real execd"), so
  // the id is handed out only once execd answers for it. Any other answer ends the wait:
  // the next call reports it.
  const int64_t give_up_ms = NowMillis() + kRegistrationWaitMs;
  for (int64_t pause_ms = 2;; pause_ms = std::min<int64_t>(pause_ms * 2, 50)) {
    auto status = execd.GetStatus(exec_id, cancel);
    if (status.ok() || status.error().code != ErrorCode::kNotFound) return;
    if (NowMillis() + pause_ms > give_up_ms || cancel->cancelled()) return;
    std::this_thread::sleep_for(std::chrono::milliseconds(pause_ms));
  }
}

Result<Exec::Logs> Exec::ReadLogs(const std::string& sandbox_id, const std::string& exec_id,
                                  int64_t cursor, CancelToken* cancel) {
  auto execd = upstream_->Execd(sandbox_id, *config_, cancel);
  if (!execd.ok()) return execd.error();
  // Status first: a command that ends between the two reads is then still "running"
  // here and its last output comes with the next call, instead of being lost.
  auto status = execd->GetStatus(exec_id, cancel);
  if (!status.ok()) return status.error();
  Logs logs;
  auto data = execd->Logs(exec_id, cursor, &logs.cursor, cancel);
  if (!data.ok()) return data.error();
  logs.data = std::move(data).value();
  logs.running = status->running;
  if (!status->running && status->exit_code && *status->exit_code >= 0) {
    logs.exit_code = status->exit_code;
  }
  if (logs.running) {
    // The tail may end inside a character still being written: leave it for next time.
    const size_t keep = CompleteUtf8Prefix(logs.data);
    logs.cursor -= static_cast<int64_t>(logs.data.size() - keep);
    logs.data.resize(keep);
  }
  return logs;
}

}  // namespace abx::core
