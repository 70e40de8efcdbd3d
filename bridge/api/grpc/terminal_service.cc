#include "bridge/api/grpc/terminal_service.h"

#include <memory>
#include <mutex>

#include "bridge/api/grpc/blocking_op.h"
#include "bridge/base/error_codes.h"
#include "bridge/core/terminals/terminals.h"

namespace abx::api {
namespace {

namespace pb = abx::opensandbox::v1;

using Reactor = grpc::ServerBidiReactor<pb::TerminalInput, pb::TerminalEvent>;

// One Attach call. The body (on the TaskRunner) reads the first message for the
// configuration, holds the terminal, then reads input until the client closes its side.
class AttachReactor final : public Reactor {
 public:
  AttachReactor(const TypedDeps& deps, grpc::CallbackServerContext* context)
      : runner_(deps.runner), call_(deps, context, "Terminals.Attach") {}

  void Start() {
    runner_->Run([this] {
      pb::TerminalInput first;
      Status status = OkStatus();
      if (!Read(&first)) {
        status = MakeError(ErrorCode::kCancelled, "Terminals.Attach ended before its attach message");
      } else if (!first.has_attach()) {
        status = InvalidParams("attach", "the first message of Terminals.Attach must be attach");
      } else {
        status = RunTypedBody(call_, first.attach().config(), [&](TypedCall& call) { return Body(call, first.attach()); });
      }
      this->Finish(call_.Finish(status));
    });
  }

  bool Read(pb::TerminalInput* message) {
    return reads_.Run([&] { this->StartRead(message); });
  }
  bool Write(const pb::TerminalEvent& event) {
    return writes_.Run([&] { this->StartWrite(&event); });
  }

  void OnReadDone(bool ok) override { reads_.Done(ok); }
  void OnWriteDone(bool ok) override { writes_.Done(ok); }
  void OnCancel() override { call_.cancel()->Cancel(); }
  void OnDone() override { delete this; }

 private:
  // The stream as the terminal's holder.
  class Holder final : public core::TerminalHolder {
   public:
    explicit Holder(AttachReactor* reactor) : reactor_(reactor) {}
    void OnOutput(const std::string&, uint64_t offset, const std::string& data) override {
      pb::TerminalEvent event;
      event.mutable_output()->set_offset(offset);
      event.mutable_output()->set_data(data);
      reactor_->Write(event);
    }
    void OnExit(const std::string&, std::optional<int> exit_code, uint64_t offset,
                const std::optional<Error>& error) override {
      pb::TerminalEvent event;
      pb::TerminalExit* exit = event.mutable_exit();
      if (exit_code) exit->set_exit_code(*exit_code);
      exit->set_offset(offset);
      if (error) {
        exit->mutable_error()->set_code(std::string(EppCodeName(error->code)));
        exit->mutable_error()->set_message(error->message);
      }
      reactor_->Write(event);
    }
    void OnDetached(const std::string&, uint64_t offset, const std::string& reason) override {
      pb::TerminalEvent event;
      event.mutable_detached()->set_offset(offset);
      event.mutable_detached()->set_reason(reason);
      reactor_->Write(event);
    }

   private:
    AttachReactor* reactor_;
  };

  Status Body(TypedCall& call, const pb::AttachTerminal& attach) {
    ABX_ASSIGN_OR_RETURN(std::string sandbox_id, Required(attach.sandbox_id(), "sandbox_id"));
    ABX_ASSIGN_OR_RETURN(std::string pty_id, Required(attach.pty_id(), "pty_id"));
    core::Terminals terminals(call.upstream(), &call.config());
    auto holder = std::make_shared<Holder>(this);
    std::optional<uint64_t> since;
    if (attach.has_since()) since = attach.since();
    Status attached = terminals.Attach(
        sandbox_id, pty_id, since, holder,
        [&](uint64_t offset, uint64_t lost) {
          pb::TerminalEvent event;
          event.mutable_attached()->set_offset(offset);
          event.mutable_attached()->set_lost(lost);
          Write(event);
        },
        call.cancel());
    if (!attached.ok()) return attached;
    Status outcome = OkStatus();
    pb::TerminalInput input;
    while (Read(&input)) {
      Status st = OkStatus();
      if (input.has_data()) {
        st = terminals.Input(sandbox_id, pty_id, holder.get(), input.data());
      } else if (input.has_resize()) {
        const uint32_t cols = input.resize().cols(), rows = input.resize().rows();
        if (cols < 1 || cols > 65535 || rows < 1 || rows > 65535) {
          st = InvalidParams("resize", "cols and rows must be 1 to 65535");
        } else {
          st = terminals.Resize(sandbox_id, pty_id, holder.get(), static_cast<int>(cols), static_cast<int>(rows));
        }
      } else if (input.has_signal()) {
        st = terminals.Signal(sandbox_id, pty_id, holder.get(), input.signal());
      } else if (input.has_attach()) {
        st = InvalidParams("attach", "attach comes only as the first message");
      }
      if (!st.ok()) {
        outcome = st;
        break;
      }
    }
    // The stream lets go of the terminal, which runs on (a typed caller closes it).
    terminals.Detach(holder.get());
    return outcome;
  }

  TaskRunner* const runner_;
  TypedCall call_;
  BlockingOp reads_;
  BlockingOp writes_;
};

}  // namespace

grpc::ServerUnaryReactor* TerminalService::Open(grpc::CallbackServerContext* context,
                                                const pb::OpenTerminalRequest* request,
                                                pb::OpenTerminalReply* reply) {
  return Serve(deps_, context, "Terminals.Open", request->config(), [=](TypedCall& call) -> Status {
    core::TerminalOpenSpec spec;
    ABX_ASSIGN_OR_RETURN(spec.sandbox_id, Required(request->sandbox_id(), "sandbox_id"));
    if (request->cols() > 65535 || request->rows() > 65535) {
      return InvalidParams(request->cols() > 65535 ? "cols" : "rows", "cols and rows must be 1 to 65535");
    }
    if (request->cols()) spec.cols = static_cast<int>(request->cols());
    if (request->rows()) spec.rows = static_cast<int>(request->rows());
    spec.cwd = request->cwd();
    if (!request->term().empty()) spec.term = request->term();
    spec.env.insert(request->env().begin(), request->env().end());
    spec.command = request->command();
    spec.keep = true;  // no session ends it
    core::Terminals terminals(call.upstream(), &call.config());
    ABX_ASSIGN_OR_RETURN(std::string pty_id, terminals.Open(spec, nullptr, [](const std::string&) {}, call.cancel()));
    reply->set_pty_id(pty_id);
    return OkStatus();
  });
}

Reactor* TerminalService::Attach(grpc::CallbackServerContext* context) {
  auto* reactor = new AttachReactor(deps_, context);
  reactor->Start();
  return reactor;
}

grpc::ServerUnaryReactor* TerminalService::Close(grpc::CallbackServerContext* context,
                                                 const pb::CloseTerminalRequest* request,
                                                 pb::CloseTerminalReply* reply) {
  return Serve(deps_, context, "Terminals.Close", request->config(), [=](TypedCall& call) -> Status {
    ABX_ASSIGN_OR_RETURN(std::string sandbox_id, Required(request->sandbox_id(), "sandbox_id"));
    ABX_ASSIGN_OR_RETURN(std::string pty_id, Required(request->pty_id(), "pty_id"));
    core::Terminals terminals(call.upstream(), &call.config());
    ABX_ASSIGN_OR_RETURN(bool closed, terminals.Close(sandbox_id, pty_id, call.cancel()));
    reply->set_closed(closed);
    return OkStatus();
  });
}

grpc::ServerUnaryReactor* TerminalService::List(grpc::CallbackServerContext* context,
                                                const pb::ListTerminalsRequest* request,
                                                pb::ListTerminalsReply* reply) {
  return Serve(deps_, context, "Terminals.List", request->config(), [=](TypedCall& call) -> Status {
    ABX_ASSIGN_OR_RETURN(std::string sandbox_id, Required(request->sandbox_id(), "sandbox_id"));
    core::Terminals terminals(call.upstream(), &call.config());
    for (const core::TerminalInfo& t : terminals.List(sandbox_id)) {
      pb::TerminalStatus* out = reply->add_terminals();
      out->set_pty_id(t.pty_id);
      out->set_running(t.running);
      out->set_offset(t.offset);
      out->set_attached(t.attached);
    }
    return OkStatus();
  });
}

}  // namespace abx::api
