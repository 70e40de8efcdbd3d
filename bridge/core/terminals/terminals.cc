#include "bridge/core/terminals/terminals.h"

#include "bridge/base/log.h"
#include "bridge/core/endpoint_cache.h"
#include "bridge/core/execd_release.h"
#include "bridge/opensandbox/pty_frames.h"

namespace abx::core {
namespace {

// How long pty.open waits for a terminal opened at another size to settle (Resize).
constexpr int64_t kSizeSettleMs = 1000;

}  // namespace

std::function<bool()> Terminals::SandboxGone(const std::string& sandbox_id) const {
  EndpointCache* upstream = upstream_;
  ProviderConfig config = *config_;
  return [upstream, config, sandbox_id] {
    CancelToken uncancellable;  // bounded by request_timeout
    auto record = upstream->Lifecycle(config).Get(sandbox_id, &uncancellable);
    if (!record.ok()) return record.error().code == ErrorCode::kNotFound;
    return record->state == "Terminated" || record->state == "Failed" || record->state == "Stopping";
  };
}

Status Terminals::PlainHttpServer() const {
  // Endpoints take the server's scheme; the bridge's WebSocket client has no TLS.
  if (config_->lifecycle_url.rfind("https://", 0) != 0) return OkStatus();
  return MakeError(ErrorCode::kUnsupported,
                   "terminals need a plain http:// server: the bridge's WebSocket client has no TLS");
}

Result<std::string> Terminals::Open(const TerminalOpenSpec& spec, std::shared_ptr<TerminalHolder> holder,
                                    const std::function<void(const std::string&)>& answer, CancelToken* cancel) {
  if (Status plain = PlainHttpServer(); !plain.ok()) return plain.error();
  ABX_ASSIGN_OR_RETURN(opensandbox::ExecdClient execd, upstream_->Execd(spec.sandbox_id, *config_, cancel));
  if (!spec.term.empty() || !spec.env.empty() || !spec.command.empty()) {
    // Before 1.0.19 execd drops the `command` field that carries them and starts a plain
    // shell: refused by name rather than ignored (docs/epp1.md §3, pty).
    ABX_ASSIGN_OR_RETURN(bool before, ExecdBefore1019(*upstream_, spec.sandbox_id, execd, cancel));
    if (before) {
      // An execd without terminals at all (before 1.0.10) is "too old" first.
      auto probe = execd.GetPty("abx-terminal-route-probe", cancel);
      if (!probe.ok() && probe.error().code != ErrorCode::kNotFound) return probe.error();
      const char* option = !spec.command.empty() ? "command" : !spec.env.empty() ? "env" : "term";
      Error e = MakeError(ErrorCode::kUnsupported,
                          std::string("the sandbox's execd is older than 1.0.19 and would ignore the terminal's ") +
                              option + " (it starts a plain shell with its own environment); open it without " +
                              "term, env and command, or use a sandbox with execd 1.0.19 or newer");
      e.field = option;
      return e;
    }
  }
  ABX_ASSIGN_OR_RETURN(std::string pty_id, execd.CreatePty(spec.cwd, TerminalCommand(spec), cancel));
  auto terminal = std::make_shared<Terminal>(spec.sandbox_id, pty_id, spec.keep, execd, SandboxGone(spec.sandbox_id));
  const int64_t timeout_ms = RequestTimeoutMs();
  Status connected = terminal->Connect(false, cancel, timeout_ms);
  if (!connected.ok()) {
    CancelToken uncancellable;
    execd.DeletePty(pty_id, &uncancellable);
    return connected.error().Within("open terminal");
  }
  if (spec.cols != 80 || spec.rows != 24) {
    // Answered once the terminal runs at its size (docs/epp1.md §3, pty.open): a shell
    // shows its prompt within milliseconds; a program that prints nothing costs the bound.
    terminal->Resize(spec.cols, spec.rows);
    terminal->WaitSizeSettled(kSizeSettleMs, cancel);
    if (cancel->cancelled()) {
      terminal->Abort();
      CancelToken uncancellable;
      execd.DeletePty(pty_id, &uncancellable);
      return MakeError(ErrorCode::kCancelled, "opening terminal " + pty_id + " was cancelled");
    }
  }
  TerminalsOf(*upstream_).Add(terminal);
  if (holder) {
    terminal->SetHolder(std::move(holder), 0, [&](uint64_t, uint64_t) { answer(pty_id); });
  } else {
    answer(pty_id);
  }
  return pty_id;
}

Status Terminals::Attach(const std::string& sandbox_id, const std::string& pty_id, std::optional<uint64_t> since,
                         std::shared_ptr<TerminalHolder> holder,
                         const std::function<void(uint64_t, uint64_t)>& answer, CancelToken* cancel) {
  if (Status plain = PlainHttpServer(); !plain.ok()) return plain;
  std::shared_ptr<Terminal> terminal = TerminalsOf(*upstream_).Find(sandbox_id, pty_id);
  if (!terminal) {
    // One this bridge does not hold (another daemon opened it, or this one restarted):
    // execd's window of it. A shell that already ended is never started again.
    ABX_ASSIGN_OR_RETURN(opensandbox::ExecdClient execd, upstream_->Execd(sandbox_id, *config_, cancel));
    ABX_ASSIGN_OR_RETURN(opensandbox::PtyStatus status, execd.GetPty(pty_id, cancel));
    if (since && *since > status.output_offset) {
      return InvalidParams("since", "since is beyond the end of the terminal's output (" +
                                        std::to_string(status.output_offset) + ")");
    }
    if (!status.running) {
      return MakeError(ErrorCode::kNotFound, "terminal " + pty_id + " has ended and this bridge kept nothing of it");
    }
    terminal = std::make_shared<Terminal>(sandbox_id, pty_id, /*keep=*/true, execd, SandboxGone(sandbox_id));
    terminal->StartAt(since.value_or(status.output_offset));
    Status connected = terminal->Connect(true, cancel, RequestTimeoutMs());
    if (!connected.ok()) return connected.error().Within("attach terminal");
    TerminalsOf(*upstream_).Add(terminal);
    return terminal->SetHolder(std::move(holder), since, answer);
  }
  {
    Status restored = terminal->Restore(cancel, RequestTimeoutMs());
    if (!restored.ok()) return restored.error().Within("attach terminal");
  }
  const bool ended = terminal->ended();
  Status held = terminal->SetHolder(holder, since, answer);
  if (!held.ok()) return held;
  if (ended) {
    // What it kept, then its exit; after that the terminal is gone.
    terminal->WaitExitDelivered(RequestTimeoutMs());
    TerminalsOf(*upstream_).Remove(terminal.get());
  }
  return OkStatus();
}

namespace {

Result<std::shared_ptr<Terminal>> Held(EndpointCache* upstream, const std::string& sandbox_id,
                                       const std::string& pty_id, const TerminalHolder* holder) {
  std::shared_ptr<Terminal> terminal = TerminalsOf(*upstream).Find(sandbox_id, pty_id);
  if (!terminal) {
    Error e = MakeError(ErrorCode::kNotFound, "terminal " + pty_id + " is not open in sandbox " + sandbox_id);
    e.field = "pty_id";
    return e;
  }
  if (!terminal->Holds(holder)) {
    return MakeError(ErrorCode::kInvalidState,
                     "terminal " + pty_id + " is not attached to this session; pty.attach it first");
  }
  return terminal;
}

}  // namespace

Status Terminals::Input(const std::string& sandbox_id, const std::string& pty_id, const TerminalHolder* holder,
                        std::string bytes) {
  ABX_ASSIGN_OR_RETURN(std::shared_ptr<Terminal> terminal, Held(upstream_, sandbox_id, pty_id, holder));
  return terminal->Send(false, opensandbox::PtyStdinFrame(bytes), RequestTimeoutMs());
}

Status Terminals::Resize(const std::string& sandbox_id, const std::string& pty_id, const TerminalHolder* holder,
                         int cols, int rows) {
  ABX_ASSIGN_OR_RETURN(std::shared_ptr<Terminal> terminal, Held(upstream_, sandbox_id, pty_id, holder));
  return terminal->Resize(cols, rows);
}

Status Terminals::Signal(const std::string& sandbox_id, const std::string& pty_id, const TerminalHolder* holder,
                         const std::string& signal) {
  auto what = TerminalSignalFor(signal);
  if (!what) {
    Error e = MakeError(ErrorCode::kUnsupported, "signal " + signal +
                                                     " cannot reach a terminal: SIGINT, SIGQUIT, SIGTSTP, SIGTERM, "
                                                     "SIGKILL and SIGHUP can");
    e.field = "signal";
    return e;
  }
  ABX_ASSIGN_OR_RETURN(std::shared_ptr<Terminal> terminal, Held(upstream_, sandbox_id, pty_id, holder));
  if (!what->input.empty()) return terminal->Send(false, opensandbox::PtyStdinFrame(what->input), RequestTimeoutMs());
  return terminal->Send(true, opensandbox::PtySignalFrame(what->frame), 0);
}

Result<bool> Terminals::Close(const std::string& sandbox_id, const std::string& pty_id, CancelToken* cancel) {
  ABX_ASSIGN_OR_RETURN(opensandbox::ExecdClient execd, upstream_->Execd(sandbox_id, *config_, cancel));
  ABX_ASSIGN_OR_RETURN(bool deleted, execd.DeletePty(pty_id, cancel));
  std::shared_ptr<Terminal> terminal = TerminalsOf(*upstream_).Find(sandbox_id, pty_id);
  if (!terminal) return deleted;
  // execd's exit frame reaches the holder before the answer.
  terminal->EndIfDisconnected();
  terminal->WaitExitDelivered(RequestTimeoutMs());
  terminal->Abort();
  TerminalsOf(*upstream_).Remove(terminal.get());
  terminal->DetachAll();  // a holder's session may end any time now
  return deleted;
}

std::vector<TerminalInfo> Terminals::List(const std::string& sandbox_id) {
  std::vector<TerminalInfo> out;
  for (const auto& terminal : TerminalsOf(*upstream_).Of(sandbox_id)) out.push_back(terminal->Info());
  return out;
}

void Terminals::Detach(const TerminalHolder* holder) {
  for (const auto& terminal : TerminalsOf(*upstream_).Of("")) terminal->Detach(holder);
}

void Terminals::Release(const TerminalHolder* holder) {
  for (const auto& terminal : TerminalsOf(*upstream_).Of("")) {
    const bool held = terminal->Holds(holder);
    terminal->Detach(holder);
    if (!held || terminal->keep()) continue;
    CancelToken uncancellable;  // bounded by request_timeout
    auto closed = Close(terminal->sandbox_id(), terminal->pty_id(), &uncancellable);
    if (!closed.ok()) {
      log::Warn("pty.cleanup_failed", {{"pty_id", terminal->pty_id()}, {"error", closed.error().message}});
    }
  }
}

}  // namespace abx::core
