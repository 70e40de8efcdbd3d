#include "bridge/api/grpc/code_service.h"

#include <rapidjson/document.h>

#include <mutex>

#include "bridge/base/json.h"
#include "bridge/core/code/code.h"

namespace abx::api {
namespace {

namespace pb = abx::opensandbox::v1;

constexpr double kMaxTimeoutSeconds = 365.0 * 86400;

void ToProto(const core::CodeResult& result, int64_t seq, pb::CodeResult* out) {
  out->set_seq(seq);
  out->set_main(result.main);
  rapidjson::Document data;
  data.Parse(result.data_json.c_str(), result.data_json.size());
  if (!data.IsObject()) return;
  for (auto& m : data.GetObject()) {
    (*out->mutable_data())[m.name.GetString()] =
        m.value.IsString() ? std::string(m.value.GetString(), m.value.GetStringLength()) : json::ToJson(m.value);
  }
}

// Code.Run: each output and result as it comes, in order; a write that fails means the
// client is gone, so the run is cancelled (the kernel interrupted).
class StreamingCodeSink final : public core::CodeSink {
 public:
  StreamingCodeSink(StreamCallReactor<pb::CodeEvent>* stream, CancelToken* cancel)
      : stream_(stream), cancel_(cancel) {}

  void OnOutput(bool is_stderr, const std::string& data) override {
    pb::CodeEvent event;
    pb::CodeOutputChunk* output = event.mutable_output();
    output->set_stream(is_stderr ? "stderr" : "stdout");
    output->set_data(data);
    std::lock_guard<std::mutex> lock(mu_);
    output->set_seq(seq_++);
    Send(event);
  }
  void OnResult(const core::CodeResult& result) override {
    pb::CodeEvent event;
    std::lock_guard<std::mutex> lock(mu_);
    ToProto(result, seq_++, event.mutable_result());
    Send(event);
  }
  void Done(const core::Execution& e) {
    pb::CodeEvent event;
    pb::Execution* out = event.mutable_done();
    out->set_context_id(e.context_id);
    if (e.execution_count) out->set_execution_count(*e.execution_count);
    out->set_stdout(e.stdout_data);
    out->set_stderr(e.stderr_data);
    for (const core::CodeResult& result : e.results) ToProto(result, 0, out->add_results());
    if (e.error) {
      out->mutable_error()->set_name(e.error->name);
      out->mutable_error()->set_value(e.error->value);
      for (const std::string& frame : e.error->traceback) out->mutable_error()->add_traceback(frame);
    }
    out->set_timed_out(e.timed_out);
    out->set_truncated(e.truncated);
    std::lock_guard<std::mutex> lock(mu_);
    Send(event);
  }

 private:
  void Send(const pb::CodeEvent& event) {
    if (broken_) return;
    if (!stream_->Write(event)) {
      broken_ = true;
      cancel_->Cancel();
    }
  }

  StreamCallReactor<pb::CodeEvent>* stream_;
  CancelToken* cancel_;
  std::mutex mu_;  // one Write at a time, seq in write order
  int64_t seq_ = 0;
  bool broken_ = false;
};

}  // namespace

grpc::ServerUnaryReactor* CodeService::CreateContext(grpc::CallbackServerContext* context,
                                                     const pb::CreateCodeContextRequest* request,
                                                     pb::CodeContext* reply) {
  return Serve(deps_, context, "Code.CreateContext", request->config(), [=](TypedCall& call) -> Status {
    ABX_ASSIGN_OR_RETURN(std::string id, Required(request->sandbox_id(), "sandbox_id"));
    core::CodeInterpreter code(call.upstream(), &call.config());
    const std::string language = request->language().empty() ? "python" : request->language();
    ABX_ASSIGN_OR_RETURN(auto created, code.CreateContext(id, language, request->cwd(), call.cancel()));
    reply->set_context_id(created.id);
    reply->set_language(created.language);
    return OkStatus();
  });
}

grpc::ServerUnaryReactor* CodeService::ListContexts(grpc::CallbackServerContext* context,
                                                    const pb::ListCodeContextsRequest* request,
                                                    pb::ListCodeContextsReply* reply) {
  return Serve(deps_, context, "Code.ListContexts", request->config(), [=](TypedCall& call) -> Status {
    ABX_ASSIGN_OR_RETURN(std::string id, Required(request->sandbox_id(), "sandbox_id"));
    core::CodeInterpreter code(call.upstream(), &call.config());
    ABX_ASSIGN_OR_RETURN(auto contexts, code.ListContexts(id, request->language(), call.cancel()));
    for (const auto& c : contexts) {
      pb::CodeContext* out = reply->add_contexts();
      out->set_context_id(c.id);
      out->set_language(c.language);
    }
    return OkStatus();
  });
}

grpc::ServerUnaryReactor* CodeService::DeleteContext(grpc::CallbackServerContext* context,
                                                     const pb::DeleteCodeContextRequest* request,
                                                     pb::DeleteCodeContextReply* reply) {
  return Serve(deps_, context, "Code.DeleteContext", request->config(), [=](TypedCall& call) -> Status {
    ABX_ASSIGN_OR_RETURN(std::string id, Required(request->sandbox_id(), "sandbox_id"));
    ABX_ASSIGN_OR_RETURN(std::string context_id, Required(request->context_id(), "context_id"));
    core::CodeInterpreter code(call.upstream(), &call.config());
    ABX_ASSIGN_OR_RETURN(bool deleted, code.DeleteContext(id, context_id, call.cancel()));
    reply->set_deleted(deleted);
    return OkStatus();
  });
}

grpc::ServerWriteReactor<pb::CodeEvent>* CodeService::Run(grpc::CallbackServerContext* context,
                                                          const pb::RunCodeRequest* request) {
  return ServeStream<pb::CodeEvent>(
      deps_, context, "Code.Run", request->config(),
      [=](TypedCall& call, StreamCallReactor<pb::CodeEvent>* stream) -> Status {
        core::CodeRunSpec spec;
        ABX_ASSIGN_OR_RETURN(spec.sandbox_id, Required(request->sandbox_id(), "sandbox_id"));
        ABX_ASSIGN_OR_RETURN(spec.code, Required(request->code(), "code"));
        spec.context_id = request->context_id();
        spec.language = request->language();
        if (request->has_timeout_seconds()) {
          const double t = request->timeout_seconds();
          if (!(t > 0 && t <= kMaxTimeoutSeconds)) {
            return InvalidParams("timeout_seconds", "timeout_seconds must be positive, at most a year");
          }
          spec.timeout_s = t;
        }
        core::CodeInterpreter code(call.upstream(), &call.config());
        StreamingCodeSink sink(stream, call.cancel());
        ABX_ASSIGN_OR_RETURN(core::Execution execution, code.Run(spec, call.cancel(), &sink));
        sink.Done(execution);
        return OkStatus();
      });
}

}  // namespace abx::api
