#pragma once
// Commands in a sandbox over execd: what EPP/1's exec.start and exec.run need that
// execd lacks. execd takes only a shell string (argv is quoted into one, see
// shell_quote.h), has no stdin (the data is uploaded to a file the command reads and
// removes at once; a stdin stream is a pipe made in the sandbox, stdin_pipe_script.h), takes a uid rather than a user name (a name is resolved in the
// sandbox first), and frames output by lines (output_assembler.h restores them).

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "bridge/base/cancel.h"
#include "bridge/base/error.h"
#include "bridge/core/config.h"
#include "bridge/core/endpoint_cache.h"
#include "bridge/core/exec/output_assembler.h"
#include "bridge/core/run_queue.h"

namespace abx::core {

class BridgeCore;

struct ExecSpec {
  std::string sandbox_id;
  std::string command;  // the shell string (argv already joined)
  std::map<std::string, std::string> env;
  std::string cwd;
  std::string user;  // a name or a numeric uid; empty: execd's own user
  std::optional<std::string> stdin_data;
  bool stdin_stream = false;  // a pipe process.stdin writes (process_stdin.h)
  std::optional<double> timeout_s;
  bool detached = false;
  std::string shell_id;  // non-empty: run in that shell (bridge/core/exec/shells.h)
  // The shell's place in line taken when the request arrived (run_queue.h); null: taken
  // when the run starts.
  std::shared_ptr<RunPlace> place;
};

// A command request as a front door read it (EPP params or a typed request), before the
// checks both doors share. Exactly one of `argv` and `command` must be set.
struct ExecRequest {
  std::string sandbox_id;
  std::optional<std::vector<std::string>> argv;
  std::optional<std::string> command;
  std::map<std::string, std::string> env;
  std::string cwd;
  std::string user;
  std::optional<std::string> stdin_data;
  bool stdin_stream = false;
  std::optional<double> timeout_s;
  const char* timeout_field = "timeout";  // the request's name for it, for errors
  bool detached = false;
  std::string shell_id;
};

// The one validation of a command request: a sandbox id, exactly one of a non-empty argv
// without NUL characters (quoted into a shell string, shell_quote.h) or a command that is
// not blank, a positive timeout, stdin_stream with neither stdin nor detached. A failure is
// -32602 naming the field. With a shell_id, env, user, stdin, stdin_stream and detached
// are E8004 naming the option: a shell cannot honour them.
Result<ExecSpec> ValidateExec(ExecRequest request);

struct ExecExit {
  std::optional<int> exit_code;  // only what execd reported; never made up
  std::string signal;            // "SIGKILL" … when a signal ended it; empty otherwise
  bool timed_out = false;
  bool cancelled = false;
  std::optional<Error> error;  // why there is no exit code, when the stream broke
};

// Receives one command's life, in order: OnStarted once, OnOutput any number of times,
// OnExit once (attached commands only).
class ExecSink {
 public:
  virtual ~ExecSink() = default;
  virtual void OnStarted(const std::string& exec_id) = 0;
  // The sink may take chunk.data (std::move) or only read it; a buffer it leaves is
  // used again for later output (OutputAssembler::Recycle).
  virtual void OnOutput(OutputChunk& chunk) = 0;
  virtual void OnExit(const ExecExit& exit) = 0;
};

// Collects a command's whole output and its exit, for exec.run and Exec.Run.
class CollectingSink final : public ExecSink {
 public:
  void OnStarted(const std::string&) override {}
  void OnOutput(OutputChunk& chunk) override {
    (chunk.stream == OutputStream::kStdout ? stdout_data : stderr_data) += chunk.data;
  }
  void OnExit(const ExecExit& exit_info) override { exit = exit_info; }

  std::string stdout_data, stderr_data;
  ExecExit exit;
};

class Exec {
 public:
  Exec(BridgeCore* core, EndpointCache* upstream, const ProviderConfig* config)
      : core_(core), upstream_(upstream), config_(config) {}

  // Starts the command and, unless detached, follows it to its end. An error return
  // means it never started (OnStarted was not called); after OnStarted every outcome,
  // broken streams included, arrives through OnExit. A command with a shell_id runs in
  // that shell (Shells::Run).
  Status Run(const ExecSpec& spec, CancelToken* cancel, ExecSink* sink);

  // Background command output from byte `cursor` (exec.logs).
  struct Logs {
    std::string data;
    int64_t cursor = 0;
    bool running = false;
    std::optional<int> exit_code;
  };
  Result<Logs> ReadLogs(const std::string& sandbox_id, const std::string& exec_id, int64_t cursor,
                        CancelToken* cancel);

 private:
  // How long a detached start waits for execd to record the command it announced.
  static constexpr int64_t kRegistrationWaitMs = 3000;
  void AwaitRegistered(opensandbox::ExecdClient& execd, const std::string& exec_id,
                       CancelToken* cancel);
  Result<std::pair<uint32_t, std::optional<uint32_t>>> ResolveUser(opensandbox::ExecdClient& execd,
                                                                   const std::string& user,
                                                                   CancelToken* cancel);
  BridgeCore* core_;
  EndpointCache* upstream_;
  const ProviderConfig* config_;
};

// The POST /command body (exposed for tests).
std::string CommandBody(const std::string& command, const std::string& cwd, bool background,
                        std::optional<int64_t> timeout_ms, std::optional<uint32_t> uid,
                        std::optional<uint32_t> gid, const std::map<std::string, std::string>& env);

}  // namespace abx::core
