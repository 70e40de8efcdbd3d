#pragma once

// One real Jupyter kernel behind a code context of the fake execd: kernel_host.py
// (embedded in the fake) under /usr/bin/python3 starts an IPython kernel through
// jupyter_client and relays the kernel's messages as JSON lines. So state, values,
// rich results and tracebacks are the interpreter's own.
//
// One run at a time (the caller holds the context's run lock). A kernel that dies
// during a run is restarted by the host with a fresh state, as Jupyter's restarter
// does; the run ends with kDied and the next run is served by the new kernel.

#include <sys/types.h>

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "rapidjson/document.h"
#include "rapidjson/stringbuffer.h"
#include "rapidjson/writer.h"

#include "tests/fake-opensandbox/sandbox_volumes.h"

namespace fake_opensandbox {

// Where a kernel runs: inside the sandbox root as its commands do (child_process.h),
// in `sandbox_cwd` (`host_cwd` on the host, when the fake cannot chroot).
struct KernelPlace {
  std::string sandbox_root;
  std::vector<VolumeMount> mounts;  // the sandbox's volumes
  std::string sandbox_cwd;
  std::string host_cwd;
};

class KernelProcess {
 public:
  // Starts the host and waits until its kernel answers (about 2 s). The host's stderr
  // goes to `log_path`.
  static std::unique_ptr<KernelProcess> Start(const KernelPlace& place,
                                              const std::string& log_path, std::string* error);
  ~KernelProcess();  // kills the host and its kernel

  enum class RunEnd { kDone, kDied, kLost };
  using OnMessage = std::function<void(const std::string& msg_type, const rapidjson::Value& content)>;
  // Executes `code`; `on_message` gets each kernel message of the run in order
  // (stream, execute_result, error, status, execute_reply, …), `on_quiet` runs whenever
  // `quiet` passes without one. kLost: the host itself is gone.
  RunEnd Run(const std::string& code, const OnMessage& on_message, std::chrono::milliseconds quiet,
             const std::function<void()>& on_quiet);

  // SIGINT to the kernel: Jupyter's interrupt for an IPython kernel.
  void Interrupt();
  // SIGKILL to the kernel (the "kernel dies" fault).
  void KillKernel();

 private:
  KernelProcess() = default;
  // Reads one line from the host within `timeout` (false: none came; *eof on EOF).
  bool ReadLine(std::string* line, std::chrono::milliseconds timeout, bool* eof);
  // Reads the host's "ready" line and records the kernel's pid.
  bool AwaitReady(std::chrono::milliseconds timeout, std::string* error);

  pid_t host_pid_ = -1;
  int to_host_ = -1;
  int from_host_ = -1;
  std::string buffered_;
  std::atomic<pid_t> kernel_pid_{-1};
  bool restarting_ = false;  // a "died" was read; a "ready" is due before the next run
};

}  // namespace fake_opensandbox
