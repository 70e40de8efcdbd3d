#pragma once

// The code contexts of one sandbox's execd (docs/opensandbox.md §2.14):
// each a real kernel (kernel_process.h), keyed by a Jupyter-session-like UUID, plus one
// default context per language that id-less runs create and reuse.
//
// What the image has decides what works, as upstream: a plain image has no Jupyter
// (runs answer "not configured"), a code-interpreter image started with another
// entrypoint has Jupyter configured but not running (context creation waits forever, as
// execd's retry loop does), and the code-interpreter image started with its script has
// Python kernels. Debian's ipykernel is the one kernel here, so "python" is the one
// language with kernels; others wait as execd does when no kernelspec matches.

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "tests/fake-opensandbox/kernel_process.h"
#include "tests/fake-opensandbox/server_stats.h"

namespace fake_opensandbox {

enum class JupyterState { kNone, kNotStarted, kRunning };

// The code-interpreter image's Jupyter token (its JUPYTER_TOKEN default).
inline constexpr char kJupyterToken[] = "opensandboxcodeinterpreterjupyter";

struct CodeContext {
  std::string id;
  std::string language;
  std::unique_ptr<KernelProcess> kernel;
  // Claimed by the one run in progress ("session is busy"); released by the thread
  // that drives the run, once the kernel is idle.
  std::atomic<bool> busy{false};
};

class CodeContexts {
 public:
  CodeContexts(JupyterState jupyter, std::string log_dir, std::shared_ptr<ServerStats> stats)
      : jupyter_(jupyter), log_dir_(std::move(log_dir)), stats_(std::move(stats)) {}
  ~CodeContexts() { Shutdown(); }

  JupyterState jupyter() const { return jupyter_; }

  // A new context with its kernel started at `place`. Waits without end (until
  // Shutdown: then null) where upstream's retry loop would: no Jupyter running, or no
  // kernel for the language. Null with *error when a kernel fails to start.
  std::shared_ptr<CodeContext> Create(const std::string& language, const KernelPlace& place,
                                       std::string* error);
  // The language's default context, created on first use like Create.
  std::shared_ptr<CodeContext> Default(const std::string& language, const KernelPlace& place,
                                       std::string* error);
  std::shared_ptr<CodeContext> Find(const std::string& id);
  // Every context (of `language`, when not empty), defaults included.
  std::vector<std::shared_ptr<CodeContext>> List(const std::string& language);
  bool Delete(const std::string& id);
  void DeleteLanguage(const std::string& language);
  // SIGINT to the context's kernel, after `delay_ms` (the slow-interrupt fault) in
  // the background; false when there is no such context.
  bool Interrupt(const std::string& id, int64_t delay_ms);

  ServerStats& stats() { return *stats_; }

  // Ends every wait and kills every kernel (the sandbox is gone).
  void Shutdown();

 private:
  // Blocks until Shutdown; returns false then.
  bool WaitForever();

  const JupyterState jupyter_;
  const std::string log_dir_;
  const std::shared_ptr<ServerStats> stats_;
  std::mutex mutex_;
  std::condition_variable shutdown_cv_;
  bool shut_down_ = false;
  std::map<std::string, std::shared_ptr<CodeContext>> contexts_;
  std::map<std::string, std::string> default_ids_;  // language → context id
  std::mutex default_creation_;                     // one default created at a time
};

}  // namespace fake_opensandbox
