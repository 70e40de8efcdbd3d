#include "bridge/api/grpc/epp_service.h"

#include <chrono>
#include <condition_variable>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <utility>

#include "bridge/api/epp/early_write.h"
#include "bridge/api/epp/features.h"
#include "bridge/api/epp/line_assembler.h"
#include "bridge/api/epp/session.h"
#include "bridge/api/grpc/blocking_op.h"
#include "bridge/base/log.h"
#include "common/config_fields.h"

namespace abx::api {
namespace {

using abx::opensandbox::v1::LocalFileReply;
using abx::opensandbox::v1::LocalFileRequest;
using abx::opensandbox::v1::SessionInput;
using abx::opensandbox::v1::SessionOutput;

// How long the shim may take to answer about a local file (an open, a rename), and its
// descriptor to arrive once it answered.
constexpr auto kShimAnswerTimeout = std::chrono::seconds(60);
constexpr auto kDescriptorTimeout = std::chrono::milliseconds(5000);

// One EppSession.Run call. The loop runs on a request thread and reads and writes
// through blocking_op.h; it finishes the call when the session is idle, and the reactor
// deletes itself when gRPC is done with it.
class SessionReactor final : public grpc::ServerBidiReactor<SessionInput, SessionOutput>,
                             public epp::LineSink {
 public:
  explicit SessionReactor(ServingState* state) : state_(state) {}

  void Start() {
    state_->requests().Run([this] { Finish(Serve()); });
  }

  // epp::LineSink, from the session's request threads: one write at a time, in the
  // order they get through. Once a write fails the host is gone for good.
  bool Write(std::string line, std::string response_id) override {
    SessionOutput out;
    out.set_line(std::move(line));
    out.set_response_id(std::move(response_id));
    return writes_.Run([&] { StartWrite(&out); });
  }

  Result<epp::LocalFileReply> AskShim(const epp::LocalFileRequest& request, CancelToken* cancel) override;
  Status CanReachLocalFiles() override {
    if (!state_->descriptor_socket().empty()) return OkStatus();
    return MakeError(ErrorCode::kUnsupported,
                     "this bridge has no descriptor socket for local files (see bridge.descriptor_socket in its log)");
  }
  void TellShim(const epp::LocalFileRequest& request) override {
    SessionOutput out;
    ToProto(request, out.mutable_local_file());
    writes_.Run([&] { StartWrite(&out); });
  }

  void OnReadDone(bool ok) override { reads_.Done(ok); }
  void OnWriteDone(bool ok) override { writes_.Done(ok); }

  // The host cancelled the call or went away: the session cancels everything at once
  // (its cancel hooks only post work, so this gRPC thread does not block).
  void OnCancel() override {
    std::lock_guard<std::mutex> lock(session_mu_);
    host_gone_ = true;
    if (session_ != nullptr) session_->OnHostGone();
  }

  void OnDone() override { delete this; }

 private:
  bool Read(SessionInput* input) {
    return reads_.Run([&] { StartRead(input); });
  }

  void ToProto(const epp::LocalFileRequest& request, LocalFileRequest* out) const;
  // A LocalFileReply from the shim: wakes the AskShim waiting for it.
  void OnLocalFileReply(const LocalFileReply& reply);
  // The shim sends nothing more: every AskShim gives up.
  void EndLocalFileReplies();

  // The session's life, from SessionStart to idle; the call's status.
  grpc::Status Serve();
  // Registers the running session for OnCancel (null: unregisters it). True when the
  // host is already gone.
  bool Track(epp::Session* session) {
    std::lock_guard<std::mutex> lock(session_mu_);
    session_ = session;
    return host_gone_;
  }
  bool host_gone() {
    std::lock_guard<std::mutex> lock(session_mu_);
    return host_gone_;
  }

  ServingState* const state_;
  BlockingOp reads_;
  BlockingOp writes_;
  std::mutex session_mu_;
  epp::Session* session_ = nullptr;  // under session_mu_
  bool host_gone_ = false;           // under session_mu_

  // Replies awaited from the shim, by token (empty until it comes).
  std::mutex replies_mu_;
  std::condition_variable replies_cv_;
  std::map<std::string, std::optional<LocalFileReply>> replies_;  // under replies_mu_
  bool replies_ended_ = false;                                    // under replies_mu_
};

void SessionReactor::ToProto(const epp::LocalFileRequest& request, LocalFileRequest* out) const {
  using Kind = epp::LocalFileRequest::Kind;
  switch (request.kind) {
    case Kind::kOpenForDownload: out->set_kind(LocalFileRequest::OPEN_FOR_DOWNLOAD); break;
    case Kind::kOpenForUpload: out->set_kind(LocalFileRequest::OPEN_FOR_UPLOAD); break;
    case Kind::kCommit: out->set_kind(LocalFileRequest::COMMIT); break;
    case Kind::kDiscard: out->set_kind(LocalFileRequest::DISCARD); break;
  }
  out->set_token(request.token);
  out->set_local_path(request.local_path);
  out->set_remote_name(request.remote_name);
  out->set_overwrite(request.overwrite);
  out->set_size(request.size);
  out->set_mode(request.mode);
  out->set_mtime_unix_ns(request.mtime_unix_ns);
  if (request.kind == Kind::kOpenForDownload || request.kind == Kind::kOpenForUpload) {
    out->set_descriptor_socket(state_->descriptor_socket());
  }
}

Result<epp::LocalFileReply> SessionReactor::AskShim(const epp::LocalFileRequest& request, CancelToken* cancel) {
  const bool opens = request.kind == epp::LocalFileRequest::Kind::kOpenForDownload ||
                     request.kind == epp::LocalFileRequest::Kind::kOpenForUpload;
  if (opens) {
    if (Status can = CanReachLocalFiles(); !can.ok()) return can.error();
  }
  {
    std::lock_guard<std::mutex> lock(replies_mu_);
    if (replies_ended_) return MakeError(ErrorCode::kCancelled, "the session's input ended");
    replies_.emplace(request.token, std::nullopt);
  }
  if (opens) state_->descriptors().Expect(request.token);
  auto forget = [&] {
    std::lock_guard<std::mutex> lock(replies_mu_);
    replies_.erase(request.token);
  };
  cancel->OnCancel([this] {
    std::lock_guard<std::mutex> lock(replies_mu_);
    replies_cv_.notify_all();
  });
  SessionOutput out;
  ToProto(request, out.mutable_local_file());
  if (!writes_.Run([&] { StartWrite(&out); })) {
    forget();
    state_->descriptors().Forget(request.token);
    return MakeError(ErrorCode::kUnreachable, "the shim went away");
  }
  std::optional<LocalFileReply> reply;
  bool ended = false;
  {
    std::unique_lock<std::mutex> lock(replies_mu_);
    auto slot = replies_.find(request.token);
    auto answered = [&] { return slot->second.has_value() || replies_ended_ || cancel->cancelled(); };
    if (request.kind == epp::LocalFileRequest::Kind::kCommit) {
      // A commit's answer says whether the file is in place, so it is awaited until it
      // comes or the shim's input ends (after which the shim turns a commit into a
      // discard): a host that stops reading stdout delays the request, not its truth.
      replies_cv_.wait(lock, answered);
    } else {
      // Bounded so that a shim that never answers cannot hold a request thread for ever.
      replies_cv_.wait_for(lock, kShimAnswerTimeout, answered);
    }
    reply = std::move(slot->second);
    ended = replies_ended_;
    replies_.erase(slot);
  }
  if (!reply) {
    state_->descriptors().Forget(request.token);
    if (cancel->cancelled()) return MakeError(ErrorCode::kCancelled, "cancelled");
    if (ended) return MakeError(ErrorCode::kCancelled, "the session's input ended");
    return MakeError(ErrorCode::kTimeout, "the shim did not answer about its local file in time");
  }
  epp::LocalFileReply result;
  result.errno_name = reply->errno_name();
  result.message = reply->message();
  result.local_path = reply->local_path();
  result.size = reply->size();
  result.mode = reply->mode();
  if (opens && result.errno_name.empty()) {
    result.fd = state_->descriptors().Take(request.token, kDescriptorTimeout, cancel);
    if (result.fd < 0) {
      if (cancel->cancelled()) return MakeError(ErrorCode::kCancelled, "cancelled");
      return MakeError(ErrorCode::kNotInitialized, "the shim's descriptor for " + result.local_path +
                                                       " did not arrive on " + state_->descriptor_socket());
    }
  } else if (opens) {
    state_->descriptors().Forget(request.token);
  }
  return result;
}

void SessionReactor::OnLocalFileReply(const LocalFileReply& reply) {
  std::lock_guard<std::mutex> lock(replies_mu_);
  auto slot = replies_.find(reply.token());
  if (slot == replies_.end()) return;  // its asker gave up
  slot->second = reply;
  replies_cv_.notify_all();
}

void SessionReactor::EndLocalFileReplies() {
  std::lock_guard<std::mutex> lock(replies_mu_);
  replies_ended_ = true;
  replies_cv_.notify_all();
}

grpc::Status SessionReactor::Serve() {
  SessionInput input;
  if (!Read(&input) || !input.has_start()) {
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

  std::string protocol_error;  // the shim broke the session's rules: the call ends with it
  {
    epp::Session session(&state_->core(), &state_->requests(), std::move(origin), this);
    if (Track(&session)) session.OnHostGone();
    epp::LineAssembler lines(&session);
    while (!session.exit_requested() && Read(&input)) {
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
      } else if (input.kind_case() == SessionInput::kLocalFileReply) {
        OnLocalFileReply(input.local_file_reply());
      }
    }
    EndLocalFileReplies();
    lines.Drop();  // a line cut short: its early write writes nothing
    // `exit` or a vanished shim: cancel everything. End of stdin (a half-close): cancel
    // the attached commands and let other requests finish, unless the shim goes away
    // meanwhile (it waits only briefly): OnCancel then cancels the rest, and a half-made
    // sandbox is killed by its create.
    if (session.exit_requested() || host_gone() || !protocol_error.empty()) {
      session.OnHostGone();
    } else {
      session.OnEndOfInput();
    }
    session.WaitIdle();
    // Every handler has returned, so no code context made by this session is missed.
    session.ReleaseOwned();
    Track(nullptr);
  }
  if (protocol_error.empty()) {
    log::Info("session.end", {{"cancelled_by_peer", host_gone() ? "yes" : "no"}});
  } else {
    log::Error("session.end", {{"protocol_error", protocol_error}});
  }
  session_lease.reset();
  // The last session gone: the idle request threads end, and the free memory the
  // allocator keeps for reuse goes back to the system at once, so an idle bridge is small.
  state_->ReleaseIdleIfNoSession();
  if (!protocol_error.empty()) {
    return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, protocol_error);
  }
  return grpc::Status::OK;
}

}  // namespace

grpc::ServerBidiReactor<SessionInput, SessionOutput>* EppSessionService::Run(
    grpc::CallbackServerContext* /*context*/) {
  auto* reactor = new SessionReactor(state_);
  reactor->Start();
  return reactor;
}

}  // namespace abx::api
