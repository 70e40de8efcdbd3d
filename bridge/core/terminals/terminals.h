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
// A connection to execd that drops while the shell lives is restored from the next
// byte owed. A holder that stops reading gets at most pty_buffer_bytes held for it:
// then the connection is dropped so the shell runs on, and restored once the holder
// has caught up (terminals.cc, kHeldBytes).

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "bridge/base/cancel.h"
#include "bridge/base/error.h"
#include "bridge/core/config.h"
#include "bridge/core/parts.h"

namespace abx::core {

class EndpointCache;
class Terminal;

// The session holding a terminal. Calls come in order, from the terminal's delivery
// thread, never after the holder was detached (Detach waits for a call in progress).
class TerminalHolder {
 public:
  virtual ~TerminalHolder() = default;
  virtual void OnOutput(const std::string& pty_id, uint64_t offset, const std::string& data) = 0;
  virtual void OnExit(const std::string& pty_id, std::optional<int> exit_code, uint64_t offset,
                      const std::optional<Error>& error) = 0;
  virtual void OnDetached(const std::string& pty_id, uint64_t offset, const std::string& reason) = 0;
};

struct TerminalOpenSpec {
  std::string sandbox_id;
  int cols = 80, rows = 24;
  std::string cwd;
  std::string term;     // empty: not given (xterm-256color where execd takes a command)
  std::map<std::string, std::string> env;
  std::string command;  // empty: a shell
  bool keep = false;
};

struct TerminalInfo {
  std::string pty_id;
  bool running = false;
  uint64_t offset = 0;  // the end of its output
  bool attached = false;
  bool keep = false;
};

// The terminals of one server's sandboxes, shared by every session with that server
// and credential (it lives in their EndpointCache).
class TerminalRegistry : public Part {
 public:
  ~TerminalRegistry() override;
  std::shared_ptr<Terminal> Find(const std::string& sandbox_id, const std::string& pty_id);
  void Add(std::shared_ptr<Terminal> terminal);
  void Remove(const Terminal* terminal);
  std::vector<std::shared_ptr<Terminal>> Of(const std::string& sandbox_id);

 private:
  std::mutex mu_;
  std::map<std::string, std::shared_ptr<Terminal>> terminals_;  // sandbox id + "\n" + pty id
};

// The terminals of a server's sandboxes: a part of its EndpointCache (parts.h).
TerminalRegistry& TerminalsOf(EndpointCache& cache);

class Terminals {
 public:
  static constexpr size_t kKeptBytes = 1 << 20;

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

// A signal name or number → what pty.signal does with it: the input byte of a keyboard
// signal ("\x03"), or the name for execd's signal frame ("SIGTERM"). Nullopt: E8004.
struct TerminalSignal {
  std::string input;
  std::string frame;
};
std::optional<TerminalSignal> TerminalSignalFor(const std::string& signal);

// The command execd runs for `spec`: `env TERM=… K=V … bash --norc --noprofile`, or
// the spec's command in place of the shell.
std::string TerminalCommand(const TerminalOpenSpec& spec);

}  // namespace abx::core
