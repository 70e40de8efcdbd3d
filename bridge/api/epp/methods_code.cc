// code.interpret: code.context.create/list/delete and code.run (docs/epp1.md §3).
#include "bridge/api/epp/methods.h"
#include "bridge/api/epp/params.h"
#include "bridge/api/epp/session.h"
#include "bridge/base/json.h"
#include "bridge/core/bridge_core.h"
#include "bridge/core/code/code.h"
#include "common/limits.h"

namespace abx::epp {
namespace {

using json::Quote;

constexpr double kMaxCodeTimeoutSeconds = 365.0 * 86400;

// The languages execd runs in Jupyter kernels (docs/opensandbox.md §2.14).
constexpr const char* kLanguages[] = {"python", "bash", "java", "javascript", "typescript", "go"};

Result<std::string> Language(const Params& p, bool required_default) {
  ABX_ASSIGN_OR_RETURN(auto language, p.String("language"));
  if (!language) return std::string(required_default ? "python" : "");
  for (const char* known : kLanguages) {
    if (*language == known) return *language;
  }
  return InvalidParams("language", "language must be one of python, bash, java, javascript, "
                                   "typescript, go");
}

std::string ContextJson(const opensandbox::CodeContextInfo& c) {
  return "{\"context_id\":" + Quote(c.id) + ",\"language\":" + Quote(c.language) + "}";
}

// Where a piece of at most `max` bytes of `text` from `at` may end: not inside a UTF-8
// sequence.
size_t ChunkEnd(const std::string& text, size_t at, size_t max) {
  size_t end = std::min(text.size(), at + max);
  if (end == text.size()) return end;
  size_t cut = end;
  while (cut > at && (static_cast<unsigned char>(text[cut]) & 0xC0) == 0x80) --cut;
  return cut > at ? cut : end;
}

// code.output and code.result notifications carrying the request's id, one seq
// sequence, all before the answer.
class NotifyingCodeSink final : public core::CodeSink {
 public:
  explicit NotifyingCodeSink(Request* req) : req_(req) {}

  void OnOutput(bool is_stderr, const std::string& data) override {
    for (size_t at = 0; at < data.size();) {
      const size_t end = ChunkEnd(data, at, kCodeOutputChunkBytes);
      req_->Notify("code.output", "{\"id\":" + req_->id_json() + ",\"seq\":" + std::to_string(seq_++) +
                                      ",\"stream\":" + (is_stderr ? "\"stderr\"" : "\"stdout\"") +
                                      ",\"data\":" + Quote(std::string_view(data).substr(at, end - at)) + "}");
      at = end;
    }
  }
  void OnResult(const core::CodeResult& result) override {
    req_->Notify("code.result", "{\"id\":" + req_->id_json() + ",\"seq\":" + std::to_string(seq_++) +
                                    ",\"result\":" + ResultJson(result) + "}");
  }

  static std::string ResultJson(const core::CodeResult& result) {
    return std::string("{\"main\":") + (result.main ? "true" : "false") + ",\"data\":" + result.data_json + "}";
  }

 private:
  Request* req_;
  int64_t seq_ = 0;
};

// The first `max` bytes of `text`, or fewer so as not to end inside a UTF-8 sequence.
void CutUtf8(std::string* text, size_t max) {
  if (text->size() <= max) return;
  text->resize(ChunkEnd(*text, 0, max));
}

std::string ExecutionJson(core::Execution e) {
  // The traceback is the kernel's and has no bound of its own: the output's.
  size_t traceback_bytes = 0;
  if (e.error) {
    for (std::string& frame : e.error->traceback) {
      CutUtf8(&frame, kCodeOutputBytes > traceback_bytes ? kCodeOutputBytes - traceback_bytes : 0);
      traceback_bytes += frame.size();
    }
    CutUtf8(&e.error->value, kCodeOutputBytes);
  }
  auto render = [&] {
    std::string results = "[";
    for (size_t i = 0; i < e.results.size(); ++i) {
      if (i) results += ",";
      results += NotifyingCodeSink::ResultJson(e.results[i]);
    }
    results += "]";
    std::string error = "null";
    if (e.error) {
      error = "{\"name\":" + Quote(e.error->name) + ",\"value\":" + Quote(e.error->value) +
              ",\"traceback\":" + json::ArrayOfStrings(e.error->traceback) + "}";
    }
    return "{\"context_id\":" + Quote(e.context_id) + ",\"execution_count\":" +
           (e.execution_count ? std::to_string(*e.execution_count) : std::string("null")) +
           ",\"stdout\":" + Quote(e.stdout_data) + ",\"stderr\":" + Quote(e.stderr_data) +
           ",\"results\":" + results + ",\"error\":" + error +
           ",\"timed_out\":" + (e.timed_out ? "true" : "false") +
           ",\"truncated\":" + (e.truncated ? "true" : "false") + "}";
  };
  // Room for the line's envelope around the result.
  const size_t limit = kMaxLineBytes - 4096;
  std::string out = render();
  // Too long for one line even so (escaping can make text up to six times longer): the
  // later results give way first, then the output is cut further.
  for (size_t i = e.results.size(); out.size() > limit && i > 0; --i) {
    core::CodeResult& r = e.results[i - 1];
    r.data_json = "{\"text/plain\":" +
                  Quote("<result of " + std::to_string(r.data_json.size()) +
                        " bytes omitted: over the line limit>") + "}";
    e.truncated = true;
    out = render();
  }
  while (out.size() > limit) {
    CutUtf8(&e.stdout_data, e.stdout_data.size() / 2);
    CutUtf8(&e.stderr_data, e.stderr_data.size() / 2);
    if (e.error) {
      for (std::string& frame : e.error->traceback) CutUtf8(&frame, frame.size() / 2);
      CutUtf8(&e.error->value, e.error->value.size() / 2);
    }
    e.truncated = true;
    out = render();
  }
  return out;
}

}  // namespace

Result<std::string> CodeContextCreate(Request& req) {
  Params p(req.params());
  ABX_ASSIGN_OR_RETURN(std::string id, SandboxId(p));
  ABX_ASSIGN_OR_RETURN(std::string language, Language(p, true));
  ABX_ASSIGN_OR_RETURN(auto cwd, p.String("cwd"));
  ABX_ASSIGN_OR_RETURN(auto keep, p.Bool("keep"));
  core::CodeInterpreter code(req.session().upstream().get(), &req.session().config());
  ABX_ASSIGN_OR_RETURN(auto context, code.CreateContext(id, language, cwd.value_or(""), &req.cancel()));
  if (!keep.value_or(false)) req.session().OwnCodeContext(id, context.id);
  return ContextJson(context);
}

Result<std::string> CodeContextList(Request& req) {
  Params p(req.params());
  ABX_ASSIGN_OR_RETURN(std::string id, SandboxId(p));
  ABX_ASSIGN_OR_RETURN(std::string language, Language(p, false));
  core::CodeInterpreter code(req.session().upstream().get(), &req.session().config());
  ABX_ASSIGN_OR_RETURN(auto contexts, code.ListContexts(id, language, &req.cancel()));
  std::string out = "{\"contexts\":[";
  for (size_t i = 0; i < contexts.size(); ++i) out += (i ? "," : "") + ContextJson(contexts[i]);
  return out + "]}";
}

Result<std::string> CodeContextDelete(Request& req) {
  Params p(req.params());
  ABX_ASSIGN_OR_RETURN(std::string id, SandboxId(p));
  ABX_ASSIGN_OR_RETURN(std::string context_id, p.RequiredString("context_id"));
  core::CodeInterpreter code(req.session().upstream().get(), &req.session().config());
  ABX_ASSIGN_OR_RETURN(bool deleted, code.DeleteContext(id, context_id, &req.cancel()));
  return std::string("{\"deleted\":") + (deleted ? "true" : "false") + "}";
}

Result<std::string> CodeRun(Request& req) {
  Params p(req.params());
  core::CodeRunSpec spec;
  ABX_ASSIGN_OR_RETURN(spec.sandbox_id, SandboxId(p));
  ABX_ASSIGN_OR_RETURN(spec.code, p.RequiredString("code"));
  if (spec.code.empty()) return InvalidParams("code", "code must not be empty");
  ABX_ASSIGN_OR_RETURN(auto context_id, p.String("context_id"));
  spec.context_id = context_id.value_or("");
  ABX_ASSIGN_OR_RETURN(spec.language, Language(p, false));
  ABX_ASSIGN_OR_RETURN(spec.timeout_s, p.Number("timeout"));
  if (spec.timeout_s && !(*spec.timeout_s > 0 && *spec.timeout_s <= kMaxCodeTimeoutSeconds)) {
    return InvalidParams("timeout", "timeout must be a positive number of seconds, at most a year");
  }
  if (req.params().HasMember("env")) {
    Error e = MakeError(ErrorCode::kUnsupported, "code.run takes no env: set os.environ in the code");
    e.field = "env";
    return e;
  }
  ABX_ASSIGN_OR_RETURN(spec.place, req.TakeRunPlace());
  core::CodeInterpreter code(req.session().upstream().get(), &req.session().config());
  NotifyingCodeSink sink(&req);
  ABX_ASSIGN_OR_RETURN(core::Execution execution, code.Run(spec, &req.cancel(), &sink));
  return ExecutionJson(std::move(execution));
}

}  // namespace abx::epp
