// The code interpreter routes of execd (docs/opensandbox.md §2.14):
// POST /code/context, GET /code/contexts[?language=], GET and DELETE
// /code/contexts/{id}, DELETE /code/contexts?language=, POST /code (a run's event
// stream) and DELETE /code?id= (the interrupt, shared with DELETE /command). Behind the
// contexts are real kernels (code_contexts.h). Also Jupyter's kernelspec list, as
// execd's port proxy reaches Jupyter inside the code-interpreter image.

#include <atomic>
#include <cerrno>
#include <cstring>
#include <chrono>
#include <memory>
#include <string>
#include <thread>

#include "rapidjson/document.h"
#include "rapidjson/error/en.h"
#include "tests/fake-opensandbox/code_contexts.h"
#include "tests/fake-opensandbox/code_events.h"
#include "tests/fake-opensandbox/event_pipe.h"
#include "tests/fake-opensandbox/execd_context.h"
#include "tests/fake-opensandbox/execd_routes.h"
#include "tests/fake-opensandbox/go_json.h"
#include "tests/fake-opensandbox/sse_events.h"
#include "tests/fake-opensandbox/stream_events.h"

namespace fake_opensandbox {
namespace {

using SteadyClock = std::chrono::steady_clock;

constexpr const char* kJupyterLanguages[] = {"python", "bash", "java", "javascript", "typescript", "go"};
// The working directory of a context created without one: the code-interpreter image's
// WORKDIR, where its Jupyter starts.
constexpr char kDefaultCwd[] = "/workspace";

bool IsJupyterLanguage(const std::string& language) {
  for (const char* l : kJupyterLanguages) {
    if (language == l) return true;
  }
  return false;
}

// Parses a JSON object body as gin's ShouldBindJSON does; false with the 400 sent.
bool ParseBody(const httplib::Request& req, httplib::Response& res, rapidjson::Document* doc,
               const char* prefix) {
  doc->Parse(req.body.c_str(), req.body.size());
  if (req.body.empty() || doc->HasParseError() || !doc->IsObject()) {
    std::string why = req.body.empty() ? "EOF"
                      : doc->HasParseError() ? rapidjson::GetParseError_En(doc->GetParseError())
                                             : "json: cannot unmarshal into a Go struct";
    SendExecdError(res, 400, "INVALID_REQUEST_BODY", std::string(prefix) + why);
    return false;
  }
  return true;
}

std::string StringMember(const rapidjson::Value& object, const char* key) {
  if (!object.IsObject()) return "";
  auto it = object.FindMember(key);
  return it != object.MemberEnd() && it->value.IsString() ? it->value.GetString() : "";
}

// Where a context's kernel runs: `cwd` in the sandbox, created if missing.
bool PlaceFor(ExecdContext* context, const std::string& cwd, KernelPlace* place, std::string* error) {
  SandboxPaths::Mapped mapped;
  if (!context->paths.Map(cwd.empty() ? kDefaultCwd : cwd, /*strict_vars=*/true, &mapped, error)) {
    return false;
  }
  if (!MakeDirectories(mapped.host, 0755)) {
    *error = "mkdir " + mapped.sandbox + ": " + std::strerror(errno);
    return false;
  }
  place->sandbox_root = context->paths.host_root();
  place->mounts = context->paths.mounts();
  place->sandbox_cwd = mapped.sandbox;
  place->host_cwd = mapped.host;
  return true;
}

void ContextJson(GoJsonWriter& w, const CodeContext& c) {
  w.StartObject();
  w.Key("id").String(c.id);
  w.Key("language").String(c.language);
  w.EndObject();
}

void HandleCreateContext(const httplib::Request& req, httplib::Response& res, ExecdContext* context) {
  rapidjson::Document body;
  if (!ParseBody(req, res, &body, "error parsing request, MAYBE invalid body format. ")) return;
  const std::string language = StringMember(body, "language");
  const std::string cwd = StringMember(body, "cwd");
  KernelPlace place;
  std::string error;
  if (!PlaceFor(context, cwd, &place, &error)) {
    SendExecdError(res, 500, "RUNTIME_ERROR", "error creating code context. " + error);
    return;
  }
  // Waits as upstream's retry loop does where no kernel can come.
  std::shared_ptr<CodeContext> created = context->code->Create(language, place, &error);
  if (!created) {
    SendExecdError(res, 500, "RUNTIME_ERROR", "error creating code context. " + error);
    return;
  }
  GoJsonWriter w;
  w.StartObject();
  w.Key("id").String(created->id);
  w.Key("language").String(created->language);
  if (!cwd.empty()) w.Key("cwd").String(cwd);
  w.EndObject();
  res.status = 200;
  res.set_content(w.Take(), "application/json; charset=utf-8");
}

void HandleListContexts(const httplib::Request& req, httplib::Response& res, ExecdContext* context) {
  const std::string language = req.get_param_value("language");
  if (language == "command" || language == "background-command" || language == "sql") {
    SendExecdError(res, 500, "RUNTIME_ERROR", "unsupported language context operation: " + language);
    return;
  }
  GoJsonWriter w;
  w.StartArray();
  for (const auto& c : context->code->List(language)) ContextJson(w, *c);
  w.EndArray();
  res.status = 200;
  res.set_content(w.Take(), "application/json; charset=utf-8");
}

void HandleDeleteLanguage(const httplib::Request& req, httplib::Response& res, ExecdContext* context) {
  if (!req.has_param("language")) {
    SendExecdError(res, 400, "MISSING_QUERY", "missing query parameter 'language'");
    return;
  }
  context->code->DeleteLanguage(req.get_param_value("language"));
  res.status = 200;
}

void HandleContextById(const httplib::Request& req, httplib::Response& res, ExecdContext* context,
                       bool remove) {
  const std::string id = req.matches[1];
  std::shared_ptr<CodeContext> found = context->code->Find(id);
  if (!found || (remove && !context->code->Delete(id))) {
    SendExecdError(res, 404, "CONTEXT_NOT_FOUND", "context " + id + " not found");
    return;
  }
  res.status = 200;
  if (remove) return;
  GoJsonWriter w;
  ContextJson(w, *found);
  res.set_content(w.Take(), "application/json; charset=utf-8");
}

// Turns the kernel's messages into execd's events, as execd's Jupyter hooks do.
class EventMapper {
 public:
  EventMapper(ServerClock clock, SteadyClock::time_point sent) : clock_(clock), sent_(sent) {}

  void Map(const std::string& msg_type, const rapidjson::Value& content, std::string* out) {
    const int64_t now = clock_.NowUnixMillis();
    if (msg_type == "stream") {
      const std::string text = StringMember(content, "text");
      if (text.empty()) return;
      AppendOutputEvent(out, StringMember(content, "name") == "stderr", text, now);
    } else if (msg_type == "execute_result") {
      auto count = content.FindMember("execution_count");
      if (count != content.MemberEnd() && count->value.IsInt64()) {
        AppendExecutionCountEvent(out, count->value.GetInt64(), now);
      }
      auto data = content.FindMember("data");
      AppendResultEvent(out, data != content.MemberEnd() ? data->value : rapidjson::Value().Move(), now);
    } else if (msg_type == "error") {
      AppendErrorStatusEvent(out, now);
      auto traceback = content.FindMember("traceback");
      AppendKernelErrorEvent(out, StringMember(content, "ename"), StringMember(content, "evalue"),
                             traceback != content.MemberEnd() ? &traceback->value : nullptr, now);
    } else if (msg_type == "status" && StringMember(content, "execution_state") == "idle" &&
               !complete_sent_) {
      complete_sent_ = true;
      const auto took = std::chrono::duration_cast<std::chrono::milliseconds>(SteadyClock::now() - sent_);
      AppendCompleteEvent(out, took.count(), now);
    }
    // execute_input, busy, display_data, update_display_data, clear_output, comm
    // messages and the reply: nothing (execd has no handler for them).
  }

 private:
  const ServerClock clock_;
  const SteadyClock::time_point sent_;
  bool complete_sent_ = false;
};

// One run: driven on a thread of its own, which holds the context until the kernel is
// idle whatever the client does, as upstream's context stays busy after a disconnect.
void DriveRun(std::shared_ptr<CodeContext> code_context, std::string code,
              std::shared_ptr<EventPipe> events, ExecdContext* context) {
  ServerStats& stats = context->code->stats();
  ++stats.code_runs_active;
  const bool kill_kernel = context->faults->Get().kernel_dies_mid_run;
  bool killed = false;
  EventMapper mapper(context->clock, SteadyClock::now());
  std::string batch;
  code_context->kernel->Run(
      code,
      [&](const std::string& msg_type, const rapidjson::Value& content) {
        mapper.Map(msg_type, content, &batch);
        if (!batch.empty()) events->Append(batch);
        if (kill_kernel && !killed && msg_type == "stream") {
          killed = true;
          code_context->kernel->KillKernel();
        }
      },
      std::chrono::milliseconds(200), [] {});
  // The context is free again before its stream ends, as execd releases it when the run
  // returns: a client that sends its next run the moment a stream ends finds it free.
  code_context->busy = false;
  --stats.code_runs_active;
  // A kernel that died (or a host that is gone) ends the stream with no terminal
  // event; Jupyter's restarter gives the context a fresh kernel for the next run.
  events->Close();
}

// Jupyter's GET /api/kernelspecs as execd's port proxy reaches it (127.0.0.1:44771 in
// the code-interpreter image): the kernels the fake can start, behind the image's token.
// Nothing listens there unless Jupyter runs: execd's proxy then answers 502.
void HandleKernelSpecs(const httplib::Request& req, httplib::Response& res, ExecdContext* context) {
  if (context->code->jupyter() != JupyterState::kRunning) {
    res.status = 502;
    res.set_content("Bad Gateway", "text/plain; charset=utf-8");
    return;
  }
  const std::string auth = req.get_header_value("Authorization");
  if (auth != std::string("token ") + kJupyterToken && auth != std::string("Token ") + kJupyterToken) {
    res.status = 403;
    res.set_content(R"({"message": "Forbidden", "reason": null})", "application/json");
    return;
  }
  // The image registers "python" beside ipykernel's own "python3" (execd skips that one).
  std::string specs = R"({"default": "python3", "kernelspecs": {)";
  bool first = true;
  for (const char* name : {"python3", "python"}) {
    if (!first) specs += ", ";
    first = false;
    specs += std::string("\"") + name + R"(": {"name": ")" + name +
             R"(", "spec": {"argv": ["python", "-m", "ipykernel_launcher", "-f", "{connection_file}"], )"
             R"("display_name": "Python", "language": "python", "interrupt_mode": "signal", )"
             R"("env": {}, "metadata": {}}, "resources": {}})";
  }
  specs += "}}";
  res.status = 200;
  res.set_content(specs, "application/json");
}

void HandleRunCode(const httplib::Request& req, httplib::Response& res, ExecdContext* context) {
  rapidjson::Document body;
  if (!ParseBody(req, res, &body, "error parsing request, MAYBE invalid body format. ")) return;
  const std::string code = StringMember(body, "code");
  if (code.empty()) {
    SendExecdError(res, 400, "INVALID_REQUEST_BODY",
                   "invalid request, validation error Key: 'RunCodeRequest.Code' Error:Field "
                   "validation for 'Code' failed on the 'required' tag");
    return;
  }
  const rapidjson::Value empty;
  auto member = body.FindMember("context");
  const rapidjson::Value& request_context = member != body.MemberEnd() ? member->value : empty;
  const std::string language = StringMember(request_context, "language");
  const std::string id = StringMember(request_context, "id");
  if (language.empty()) {
    RunCodeAsCommand(code, context, res);  // execd's `command` backend
    return;
  }
  if (!IsJupyterLanguage(language)) {
    // (execd also has `background-command` and `sql` backends; the fake has neither.)
    SendRunRefusal(res, context->release, "RUNTIME_ERROR", "error running codes unknown language: " + language);
    return;
  }
  if (context->code->jupyter() == JupyterState::kNone) {
    SendRunRefusal(res, context->release, "RUNTIME_ERROR",
                   "error running codes language runtime server not configured, please check "
                   "your image runtime");
    return;
  }
  std::shared_ptr<CodeContext> target;
  std::string error;
  if (!id.empty()) {
    target = context->code->Find(id);
    if (!target) {
      SendRunRefusal(res, context->release, "RUNTIME_ERROR", "error running codes context not found");
      return;
    }
  } else {
    KernelPlace place;
    if (PlaceFor(context, "", &place, &error)) target = context->code->Default(language, place, &error);
    if (!target) {
      SendRunRefusal(res, context->release, "RUNTIME_ERROR", "error running codes " + error);
      return;
    }
  }
  bool expected = false;
  if (!target->busy.compare_exchange_strong(expected, true)) {
    // gin appends the error to the open stream: no type, no "\n\n".
    StreamEvents(target->id, nullptr, GoErrorBody("RUNTIME_ERROR", "error running codes session is busy"),
                 nullptr, context, res);
    return;
  }
  auto events = std::make_shared<EventPipe>();
  std::thread(DriveRun, target, code, events, context).detach();
  StreamEvents(target->id, events, "", nullptr, context, res);
}

}  // namespace

bool InterruptCodeContext(ExecdContext* context, const std::string& id) {
  return context->code->Interrupt(id, context->faults->Get().slow_interrupt_ms);
}

void RegisterCodeRoutes(httplib::Server& server, ExecdContext* context) {
  const std::string p = kExecdRoutePrefix;
  server.Post(p + "/code/context", [context](const httplib::Request& req, httplib::Response& res) {
    HandleCreateContext(req, res, context);
  });
  server.Get(p + "/code/contexts", [context](const httplib::Request& req, httplib::Response& res) {
    HandleListContexts(req, res, context);
  });
  server.Delete(p + "/code/contexts", [context](const httplib::Request& req, httplib::Response& res) {
    HandleDeleteLanguage(req, res, context);
  });
  server.Get(p + "/code/contexts/([^/]+)", [context](const httplib::Request& req, httplib::Response& res) {
    HandleContextById(req, res, context, /*remove=*/false);
  });
  server.Delete(p + "/code/contexts/([^/]+)",
                [context](const httplib::Request& req, httplib::Response& res) {
                  HandleContextById(req, res, context, /*remove=*/true);
                });
  server.Post(p + "/code", [context](const httplib::Request& req, httplib::Response& res) {
    HandleRunCode(req, res, context);
  });
  // Before the port proxy route, which would send it to this host's port 44771.
  server.Get(p + "/proxy/44771/api/kernelspecs",
             [context](const httplib::Request& req, httplib::Response& res) {
               HandleKernelSpecs(req, res, context);
             });
  server.Delete(p + "/code", [context](const httplib::Request& req, httplib::Response& res) {
    HandleExecdInterrupt(req, res, context);
  });
}

}  // namespace fake_opensandbox
