#pragma once
// pty over execd's terminals (docs/epp1.md §3 "pty", docs/opensandbox.md §2.16,
// docs/mapping.md "Terminals"). The bridge holds each terminal's WebSocket, so a
// terminal outlives the session (and the shim) that opened it; what the contract adds:
// - offsets counted from pty.open, and the bridge's own copy of the last 1 MiB of
//   output, from which a session that attaches is replayed, also after the shell ended;
// - one holder at a time: attaching from another session detaches the holder, which
//   is told the first byte it did not get;
// - keyboard signals (SIGINT, SIGQUIT, SIGTSTP) written as the bytes a terminal turns
//   into them, so they reach the foreground job;
// - exactly one exit, after every byte the bridge received.
// Output reaches the holder in order from a thread of the terminal's own, so a holder
// that writes slowly stalls only its terminal.
//
// The pieces: one Terminal per terminal (terminal.h: its connection and delivery), its
// kept output (replay_buffer.h), the hand-over between holders (holder_hand_over.h),
// the frames waiting for a connection (pending_frames.h), the registry
// (terminal_registry.h), the command and signals (terminal_command.h); this file is
// what the front doors call.
//
// A connection to execd that drops while the shell lives is restored from the next
// byte owed. A holder that stops reading gets at most pty_buffer_bytes held for it:
// then the connection is dropped so the shell runs on, and restored once the holder
// has caught up (terminal.cc, kHeldBytes).

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "bridge/base/cancel.h"
#include "bridge/base/error.h"
#include "bridge/core/config.h"
#include "bridge/core/terminals/terminal.h"
#include "bridge/core/terminals/terminal_command.h"
#include "bridge/core/terminals/terminal_holder.h"
#include "bridge/core/terminals/terminal_registry.h"

namespace abx::core {

class EndpointCache;

class Terminals {
 public:
  Terminals(EndpointCache* upstream, const ProviderConfig* config) : upstream_(upstream), config_(config) {}

  // A new terminal, held by `holder` (none: held by nobody until an attach), once it
  // runs at its size. `answer` runs with its id before any of its output is delivered.
  Result<std::string> Open(const TerminalOpenSpec& spec, std::shared_ptr<TerminalHolder> holder,
                           const std::function<void(const std::string&)>& answer, CancelToken* cancel);
  // Makes `holder` the terminal's holder and replays from `since` (nullopt: from the
  // end). `answer` runs with the offset of the first byte replayed and the bytes lost
  // before it, before any of them is delivered.
  Status Attach(const std::string& sandbox_id, const std::string& pty_id, std::optional<uint64_t> since,
                std::shared_ptr<TerminalHolder> holder,
                const std::function<void(uint64_t offset, uint64_t lost)>& answer, CancelToken* cancel);
  // Input, size and signals: E8007 unless `holder` holds the terminal.
  Status Input(const std::string& sandbox_id, const std::string& pty_id, const TerminalHolder* holder,
               std::string bytes);
  Status Resize(const std::string& sandbox_id, const std::string& pty_id, const TerminalHolder* holder, int cols,
                int rows);
  Status Signal(const std::string& sandbox_id, const std::string& pty_id, const TerminalHolder* holder,
                const std::string& signal);
  // Ends the shell; answers once the holder got its exit. False when there was none.
  Result<bool> Close(const std::string& sandbox_id, const std::string& pty_id, CancelToken* cancel);
  std::vector<TerminalInfo> List(const std::string& sandbox_id);
  // The session of `holder` ends: it lets go of every terminal it holds, closing those
  // opened without keep.
  void Release(const TerminalHolder* holder);
  // The holder lets go of every terminal it holds, closing none.
  void Detach(const TerminalHolder* holder);

 private:
  // Whether the sandbox has ended, asked of the server (for a terminal's end).
  std::function<bool()> SandboxGone(const std::string& sandbox_id) const;
  // E8004 for an https:// server, before anything is sent.
  Status PlainHttpServer() const;
  int64_t RequestTimeoutMs() const { return static_cast<int64_t>(config_->request_timeout_s * 1000); }

  EndpointCache* upstream_;
  const ProviderConfig* config_;
};

}  // namespace abx::core
