#include "bridge/api/grpc/exec_events.h"

#include "bridge/base/error_codes.h"

namespace abx::api {
namespace {

namespace pb = abx::opensandbox::v1;

void ToProto(const core::ExecExit& exit, pb::ExecExit* out) {
  if (exit.exit_code) out->set_exit_code(*exit.exit_code);
  out->set_signal(exit.signal);
  out->set_timed_out(exit.timed_out);
  out->set_cancelled(exit.cancelled);
  if (exit.error) {
    out->mutable_error()->set_code(std::string(EppCodeName(exit.error->code)));
    out->mutable_error()->set_message(exit.error->message);
  }
}

pb::OutputStream ToProto(core::OutputStream stream) {
  return stream == core::OutputStream::kStdout ? pb::OUTPUT_STREAM_STDOUT : pb::OUTPUT_STREAM_STDERR;
}

}  // namespace

void ExecEventSink::OnStarted(const std::string& exec_id) {
  pb::ExecEvent event;
  event.mutable_started()->set_exec_id(exec_id);
  Send(event);
}

void ExecEventSink::OnOutput(core::OutputChunk& chunk) {
  pb::ExecEvent event;
  pb::ExecOutput* output = event.mutable_output();
  output->set_stream(ToProto(chunk.stream));
  output->set_data(std::move(chunk.data));
  std::lock_guard<std::mutex> lock(mu_);
  output->set_seq(seq_++);
  SendLocked(event);
}

void ExecEventSink::OnExit(const core::ExecExit& exit) {
  pb::ExecEvent event;
  ToProto(exit, event.mutable_exit());
  Send(event);
}

void ExecEventSink::Send(const pb::ExecEvent& event) {
  std::lock_guard<std::mutex> lock(mu_);
  SendLocked(event);
}

void ExecEventSink::SendLocked(const pb::ExecEvent& event) {
  if (broken_) return;
  if (!write_(event)) {
    broken_ = true;
    cancel_->Cancel();
  }
}

}  // namespace abx::api
