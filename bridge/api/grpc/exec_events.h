#pragma once
// A command's events as the typed API sends them (Exec.Start and Exec.Interact): every
// event of the core goes out as it comes, in order, output numbered by `seq` in the order
// written. A write that fails means the client is gone, so the command is interrupted
// (the call's cancel) rather than followed for nobody.

#include <cstdint>
#include <functional>
#include <mutex>
#include <string>

#include "bridge/base/cancel.h"
#include "bridge/core/exec/exec.h"
#include "proto/exec.pb.h"

namespace abx::api {

class ExecEventSink final : public core::ExecSink {
 public:
  // Sends one event; false once the client is gone.
  using Write = std::function<bool(const abx::opensandbox::v1::ExecEvent&)>;

  ExecEventSink(Write write, CancelToken* cancel) : write_(std::move(write)), cancel_(cancel) {}

  void OnStarted(const std::string& exec_id) override;
  void OnOutput(core::OutputChunk& chunk) override;
  void OnExit(const core::ExecExit& exit) override;

 private:
  void Send(const abx::opensandbox::v1::ExecEvent& event);
  void SendLocked(const abx::opensandbox::v1::ExecEvent& event);

  Write write_;
  CancelToken* cancel_;
  std::mutex mu_;  // one write at a time, seq in write order
  int64_t seq_ = 0;
  bool broken_ = false;
};

}  // namespace abx::api
