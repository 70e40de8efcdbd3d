#include "bridge/api/grpc/epp_service.h"

#include <mutex>
#include <string>
#include <utility>

#include "bridge/api/epp/early_write.h"
#include "bridge/api/epp/features.h"
#include "bridge/api/epp/line_assembler.h"
#include "bridge/api/epp/session.h"
#include "bridge/base/log.h"
#include "common/config_fields.h"

namespace abx::api {
namespace {

using abx::opensandbox::v1::SessionInput;
using abx::opensandbox::v1::SessionOutput;

// Serialises writes to the stream: gRPC allows one Write at a time, and the session's
// handlers write from many threads. Once a write fails the host is gone for good.
class StreamSink final : public epp::LineSink {
 public:
  explicit StreamSink(grpc::ServerReaderWriter<SessionOutput, SessionInput>* stream)
      : stream_(stream) {}

  bool Write(std::string line, std::string response_id) override {
    SessionOutput out;
    out.set_line(std::move(line));
    out.set_response_id(std::move(response_id));
    std::lock_guard<std::mutex> lock(mu_);
    if (broken_) return false;
    if (!stream_->Write(out)) broken_ = true;
    return !broken_;
  }

 private:
  std::mutex mu_;
  grpc::ServerReaderWriter<SessionOutput, SessionInput>* stream_;
  bool broken_ = false;
};

}  // namespace

grpc::Status EppSessionService::Run(grpc::ServerContext* context,
                                    grpc::ServerReaderWriter<SessionOutput, SessionInput>* stream) {
  SessionInput input;
  if (!stream->Read(&input) || !input.has_start()) {
    return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                        "the first message of a session must be SessionStart");
  }
  auto session_lease = state_->BeginSession();
  if (!session_lease) {
    return grpc::Status(grpc::StatusCode::UNAVAILABLE,
                        "the bridge is draining and accepts no new sessions");
  }
  const auto& start = input.start();
  epp::SessionOrigin origin;
  origin.config.insert(start.config().begin(), start.config().end());
  origin.config_source.insert(start.config_source().begin(), start.config_source().end());
  origin.shim_version = start.shim_version();
  origin.replay_initialize = start.replay_initialize();
  origin.shim_pid = start.shim_pid();
  for (const auto& [field, value] : origin.config) {
    const config::Field* known = config::FindField(field);
    if (known != nullptr && known->secret) {
      log::RegisterSecret(value);
    }
  }
  log::Info("session.start", {{"shim_pid", std::to_string(origin.shim_pid)},
                                    {"replayed", origin.replay_initialize.empty() ? "no" : "yes"}});

  StreamSink sink(stream);
  std::string protocol_error;  // the shim broke the session's rules: the call ends with it
  {
    epp::Session session(&state_->core(), &state_->requests(), std::move(origin), &sink);
    epp::LineAssembler lines(&session);
    while (!session.exit_requested() && stream->Read(&input)) {
      if (input.kind_case() == SessionInput::kLinePart) {
        if (!lines.AddPart(input.line_part())) {
          protocol_error = "line parts of more than " + std::to_string(kMaxLineBytes) +
                           " bytes without their line";
          break;
        }
      } else if (input.kind_case() == SessionInput::kLine) {
        std::shared_ptr<epp::EarlyWrite> early_write;
        std::string line = lines.Complete(std::move(*input.mutable_line()), &early_write);
        session.OnLine(std::move(line), std::move(early_write));
      } else if (input.kind_case() == SessionInput::kOversized) {
        lines.Drop();
        session.OnOversizedLine(input.oversized().prefix(), input.oversized().length());
      }
    }
    lines.Drop();  // a line cut short: its early write writes nothing
    // `exit` or a vanished shim: cancel everything. End of stdin (a half-close): cancel
    // the attached commands and let other requests finish, unless the shim goes away
    // meanwhile (it waits only briefly), which cancels the rest — a half-made sandbox
    // is then killed by its create.
    if (session.exit_requested() || context->IsCancelled() || !protocol_error.empty()) {
      session.OnHostGone();
    } else {
      session.OnEndOfInput();
    }
    while (!session.WaitIdleFor(std::chrono::milliseconds(100))) {
      if (context->IsCancelled()) session.OnHostGone();
    }
  }
  if (protocol_error.empty()) {
    log::Info("session.end", {{"cancelled_by_peer", context->IsCancelled() ? "yes" : "no"}});
  } else {
    log::Error("session.end", {{"protocol_error", protocol_error}});
  }
  session_lease.reset();
  // The last session gone: the idle request threads end, and the free memory the
  // allocator keeps for reuse goes back to the system at once, so an idle bridge is small.
  state_->ReleaseIdleIfNoSession();
  if (!protocol_error.empty()) return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, protocol_error);
  return grpc::Status::OK;
}

}  // namespace abx::api
