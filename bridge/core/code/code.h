#pragma once
// code.interpret over execd's code interpreter (docs/epp1.md §3, docs/opensandbox.md
// §2.14, docs/mapping.md). What the contract adds to execd's /code:
// - readiness, bounded: nothing that can enter execd's endless context-creation retry
//   (a context creation, a run without a context id) is sent before the sandbox's
//   Jupyter has been seen to list a kernel for the language; a plain image is told
//   apart at once (its execd has no Jupyter configured);
// - one run per context at a time, in arrival order, across sessions (run_queue.h),
//   where execd would refuse the second as busy;
// - cancel and timeout interrupt the kernel and wait for the run to end, so the context
//   keeps its state; a kernel that ignores the interrupt for 10 s poisons its context;
// - the Execution: output, results with the interpreter's own MIME keys, the error,
//   the execution count, within the size limits of common/limits.h.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "bridge/base/cancel.h"
#include "bridge/base/error.h"
#include "bridge/core/config.h"
#include "bridge/core/endpoint_cache.h"
#include "bridge/core/run_queue.h"

namespace abx::core {

struct CodeResult {
  bool main = true;       // the value of the last expression (the one execd passes on)
  std::string data_json;  // the MIME bundle, a JSON object: "text/plain", "image/png" …
};

struct CodeError {
  std::string name;
  std::string value;
  std::vector<std::string> traceback;
};

struct Execution {
  std::string context_id;
  std::optional<int64_t> execution_count;
  std::string stdout_data, stderr_data;  // the first kCodeOutputBytes of each
  std::vector<CodeResult> results;
  std::optional<CodeError> error;
  bool timed_out = false;
  bool truncated = false;  // output cut, or a result replaced (too large)
};

// Receives a run's output and results as they come, before the run's answer.
class CodeSink {
 public:
  virtual ~CodeSink() = default;
  virtual void OnOutput(bool is_stderr, const std::string& data) = 0;
  virtual void OnResult(const CodeResult& result) = 0;
};

struct CodeRunSpec {
  std::string sandbox_id;
  std::string code;
  std::string context_id;  // empty: the language's default context
  std::string language;    // empty: the context's own, else "python"
  std::optional<double> timeout_s;
  // The context's place in line taken when the request arrived (run_queue.h); null:
  // taken when the run starts.
  std::shared_ptr<RunPlace> place;
};

class CodeInterpreter {
 public:
  static constexpr int64_t kInterruptGraceMs = 10000;

  CodeInterpreter(EndpointCache* upstream, const ProviderConfig* config)
      : upstream_(upstream), config_(config) {}

  // A new context; with `cwd` its kernel also changes to it (created if missing),
  // which takes one run of the context.
  Result<opensandbox::CodeContextInfo> CreateContext(const std::string& sandbox_id,
                                                     const std::string& language,
                                                     const std::string& cwd, CancelToken* cancel);
  Result<std::vector<opensandbox::CodeContextInfo>> ListContexts(const std::string& sandbox_id,
                                                                 const std::string& language,
                                                                 CancelToken* cancel);
  // false when the context did not exist.
  Result<bool> DeleteContext(const std::string& sandbox_id, const std::string& context_id,
                             CancelToken* cancel);
  // Runs `spec.code` once its turn comes and answers once it has finished. A run that
  // raised is a successful Execution with `error`; a cancelled run is E8009 (the kernel
  // interrupted, the context kept).
  Result<Execution> Run(const CodeRunSpec& spec, CancelToken* cancel, CodeSink* sink);

 private:
  // E8005 for a run naming a context the sandbox does not have; the bridge forgets it.
  Error UnknownContext(const CodeRunSpec& spec);
  Status EnsureReady(opensandbox::ExecdClient& execd, const std::string& sandbox_id,
                     const std::string& language, CancelToken* cancel);
  EndpointCache* upstream_;
  const ProviderConfig* config_;
};

// The POST /code body (exposed for tests).
std::string CodeBody(const std::string& code, const std::string& context_id,
                     const std::string& language);
// A result's MIME bundle from execd's "results" (its "text" is the interpreter's
// "text/plain" again); a bundle over `max_bytes` becomes the placeholder of
// docs/epp1.md §3 and *replaced is set.
std::string ResultData(const std::string& results_json, size_t max_bytes, bool* replaced);

}  // namespace abx::core
