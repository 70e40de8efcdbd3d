#pragma once
// process.stdin: bytes into the stdin of a command started with `stdin_stream`
// (stdin_pipe_script.h explains the pipe; stdin_pipes.h keeps its state and its line of
// writes). Writes go out one at a time in the order their requests arrived, each as one
// execd upload; `eof` closes the pipe after the data.
//
// A write that has begun is not abandoned: execd keeps writing what it was given whatever
// the bridge does, and bytes of a later write must not overtake them. A cancel therefore
// ends a write only while it waits for its turn or for the pipe; once its bytes are handed
// to execd it answers when execd has written them (when the command reads them, or ends).

#include <memory>
#include <string>

#include "bridge/base/cancel.h"
#include "bridge/base/error.h"
#include "bridge/core/config.h"
#include "bridge/core/endpoint_cache.h"
#include "bridge/core/run_queue.h"

namespace abx::core {

struct StdinWrite {
  std::string sandbox_id;
  std::string exec_id;
  std::string data;
  bool eof = false;
};

class ProcessStdin {
 public:
  // How long a write waits for a command just started to name its pipe.
  static constexpr int64_t kPipeWaitMs = 30000;

  ProcessStdin(EndpointCache* upstream, const ProviderConfig* config) : upstream_(upstream), config_(config) {}

  // Writes `write.data` (and then closes the pipe when `write.eof`); returns how many bytes
  // went in. `reserved` is the write's place in line taken when its request arrived
  // (null: taken now). E8005 for a command the sandbox does not know; E8007 for one started
  // without stdin_stream, one whose stdin is closed, one that has exited.
  Result<int64_t> Write(const StdinWrite& write, std::shared_ptr<RunPlace> reserved, CancelToken* cancel);

 private:
  // The error for an exec_id that has no pipe here.
  Error NoPipe(const std::string& sandbox_id, const std::string& exec_id, CancelToken* cancel);
  // The error for a write execd refused: E8007 when the command has exited meanwhile.
  Error Refused(const std::string& sandbox_id, const std::string& exec_id, Error error);

  EndpointCache* upstream_;
  const ProviderConfig* config_;
};

}  // namespace abx::core
