#include "bridge/core/code/code.h"

#include <rapidjson/document.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <thread>

#include "bridge/base/json.h"
#include "bridge/base/log.h"
#include "bridge/base/time_util.h"
#include "bridge/core/interpreter_paths.h"
#include "common/limits.h"

namespace abx::core {
namespace {

using opensandbox::ExecdEvent;
using opensandbox::ExecdEventKind;

// A context id no context can have: a run naming it is refused at once, before execd's
// retry loop, and how it is refused says whether the sandbox has Jupyter at all.
constexpr char kProbeContextId[] = "abx-readiness-probe";
constexpr auto kReadinessPollInterval = std::chrono::milliseconds(500);
constexpr auto kBusyRetryInterval = std::chrono::milliseconds(200);
// Tries of a run execd could not send to its kernel ("failed to connect to kernel").
constexpr int kUnsentTries = 5;
constexpr auto kReinterruptInterval = std::chrono::milliseconds(1000);
constexpr auto kSettleAfterErrorMs = std::chrono::milliseconds(50);

bool Contains(const std::string& text, const char* part) { return text.find(part) != std::string::npos; }

std::string NoInterpreter(const std::string& sandbox_id) {
  return "sandbox " + sandbox_id +
         " has no code interpreter: create the sandbox with template \"code\" (the image "
         "opensandbox/code-interpreter) to run code in it";
}

// What one attempt of a run saw.
struct Attempt {
  bool complete = false;  // execution_complete
  std::string bare_code, bare_message;  // the {"code","message"} object a stream may end with
  Status status = OkStatus();
};

// Interrupts the kernel when the run is cancelled or its timeout passes, then gives it
// kInterruptGraceMs to end the run before the stream is given up.
class Watchdog {
 public:
  Watchdog(opensandbox::ExecdClient* execd, CancelToken* cancel, int64_t deadline_ms,
           int64_t grace_ms)
      : state_(std::make_shared<State>()) {
    std::weak_ptr<State> weak = state_;
    cancel->OnCancel([weak] {
      if (auto s = weak.lock()) s->Wake();
    });
    thread_ = std::thread([this, execd = *execd, cancel, deadline_ms, grace_ms]() mutable {
      Watch(execd, cancel, deadline_ms, grace_ms);
    });
  }
  ~Watchdog() {
    state_->Finish();
    thread_.join();
  }

  // The context's id, once the stream's init named it.
  void ContextKnown(const std::string& id) {
    std::lock_guard<std::mutex> lock(state_->mu);
    state_->context_id = id;
    state_->cv.notify_all();
  }
  CancelToken* stream_cancel() { return &stream_cancel_; }
  bool interrupted_for_cancel() const { return state_->reason == Reason::kCancel; }
  bool timed_out() const { return state_->reason == Reason::kTimeout; }
  bool unresponsive() const { return state_->unresponsive; }

 private:
  enum class Reason { kNone, kCancel, kTimeout };
  struct State {
    std::mutex mu;
    std::condition_variable cv;
    bool done = false;
    std::string context_id;
    std::atomic<Reason> reason{Reason::kNone};
    std::atomic<bool> unresponsive{false};
    void Wake() {
      std::lock_guard<std::mutex> lock(mu);
      cv.notify_all();
    }
    void Finish() {
      std::lock_guard<std::mutex> lock(mu);
      done = true;
      cv.notify_all();
    }
  };

  void Watch(opensandbox::ExecdClient& execd, CancelToken* cancel, int64_t deadline_ms, int64_t grace_ms) {
    std::unique_lock<std::mutex> lock(state_->mu);
    auto due = [&] {
      return state_->done || cancel->cancelled() || (deadline_ms > 0 && NowMillis() >= deadline_ms);
    };
    while (!due()) {
      if (deadline_ms > 0) {
        state_->cv.wait_for(lock, std::chrono::milliseconds(std::max<int64_t>(1, deadline_ms - NowMillis())));
      } else {
        state_->cv.wait(lock);
      }
    }
    if (state_->done) return;
    state_->reason = cancel->cancelled() ? Reason::kCancel : Reason::kTimeout;
    // The interrupt needs the context's id, which a default context's run learns from
    // its first event.
    state_->cv.wait(lock, [&] { return state_->done || !state_->context_id.empty(); });
    if (state_->done) return;
    const std::string id = state_->context_id;
    // Again every second within the grace: an interrupt that reached the kernel before
    // it began the code (between execd's init and the execute request) is lost, and
    // execd accepts a repeat.
    const auto give_up = std::chrono::steady_clock::now() + std::chrono::milliseconds(grace_ms);
    while (!state_->done && std::chrono::steady_clock::now() < give_up) {
      lock.unlock();
      Status sent = execd.InterruptCode(id, nullptr);
      if (!sent.ok()) log::Warn("code.interrupt_failed", {{"context_id", id}, {"error", sent.error().message}});
      lock.lock();
      state_->cv.wait_until(lock, std::min(give_up, std::chrono::steady_clock::now() + kReinterruptInterval),
                            [&] { return state_->done; });
    }
    if (!state_->done) {
      state_->unresponsive = true;
      lock.unlock();
      stream_cancel_.Cancel();
    }
  }

  std::shared_ptr<State> state_;
  CancelToken stream_cancel_;  // gives up the stream of a kernel that ignores interrupts
  std::thread thread_;
};

// The first `max` bytes of `text`, or fewer so as not to end inside a UTF-8 sequence.
size_t Utf8Cut(const std::string& text, size_t max) {
  if (max >= text.size()) return text.size();
  size_t cut = max;
  while (cut > 0 && (static_cast<unsigned char>(text[cut]) & 0xC0) == 0x80) --cut;
  return cut;
}

void AppendCapped(std::string* out, const std::string& data, bool* truncated) {
  if (*truncated && out->size() >= kCodeOutputBytes) return;
  const size_t room = kCodeOutputBytes > out->size() ? kCodeOutputBytes - out->size() : 0;
  if (data.size() > room) *truncated = true;
  out->append(data, 0, Utf8Cut(data, room));
}

}  // namespace

std::string CodeBody(const std::string& code, const std::string& context_id,
                     const std::string& language) {
  std::string body = "{\"code\":" + json::Quote(code) + ",\"context\":{";
  if (!context_id.empty()) body += "\"id\":" + json::Quote(context_id) + ",";
  return body + "\"language\":" + json::Quote(language) + "}}";
}

std::string ResultData(const std::string& results_json, size_t max_bytes, bool* replaced) {
  rapidjson::Document doc;
  doc.Parse<json::kParseFlags>(results_json.c_str(), results_json.size());
  std::string out = "{";
  if (!doc.HasParseError() && doc.IsObject()) {
    for (auto& m : doc.GetObject()) {
      const std::string key(m.name.GetString(), m.name.GetStringLength());
      if (out.size() > 1) out += ",";
      out += json::Quote(key == "text" ? "text/plain" : key) + ":" + json::ToJson(m.value);
    }
  }
  out += "}";
  if (out.size() > max_bytes) {
    *replaced = true;
    return "{\"text/plain\":" +
           json::Quote("<result of " + std::to_string(out.size()) + " bytes omitted: over the line limit>") + "}";
  }
  return out;
}

Status CodeInterpreter::EnsureReady(opensandbox::ExecdClient& execd, const std::string& sandbox_id,
                                    const std::string& language, CancelToken* cancel) {
  CodeRegistry& registry = upstream_->code();
  if (registry.Ready(sandbox_id, language)) return OkStatus();
  // 1. Has this sandbox's execd a Jupyter at all? Asked so that execd answers at once.
  const int64_t request_ms = static_cast<int64_t>(config_->request_timeout_s * 1000);
  Status probe = execd.RunCode(CodeBody("0", kProbeContextId, language), cancel, request_ms,
                               [](const ExecdEvent&) { return true; });
  if (probe.ok()) {
    // A stream for a context that cannot exist: not execd as documented; carry on.
  } else if (Contains(probe.error().message, "not configured")) {
    return MakeError(ErrorCode::kInvalidState, NoInterpreter(sandbox_id));
  } else if (Contains(probe.error().message, "unknown language")) {
    return MakeError(ErrorCode::kInvalidState,
                     "the code interpreter of sandbox " + sandbox_id + " has no language " + language);
  } else if (!Contains(probe.error().message, "context not found")) {
    return probe.error().Within("sandbox " + sandbox_id);
  }
  // 2. Until Jupyter lists a kernel for the language (it registers them a while after
  // it starts), within ready_timeout.
  const int64_t deadline = NowMillis() + static_cast<int64_t>(config_->ready_timeout_s * 1000);
  bool answered = false;
  for (;;) {
    const int64_t left = std::max<int64_t>(1, deadline - NowMillis());
    auto kernels = execd.ListJupyterKernels(cancel, std::min<int64_t>(left, 5000));
    if (cancel->cancelled()) return MakeError(ErrorCode::kCancelled, "code readiness check was cancelled");
    if (!kernels.ok()) return kernels.error().Within("sandbox " + sandbox_id);
    using Reached = opensandbox::JupyterKernels::Reached;
    const bool has_language = std::find(kernels->languages.begin(), kernels->languages.end(),
                                        language) != kernels->languages.end();
    if (kernels->reached == Reached::kForbidden || (kernels->reached == Reached::kYes && has_language)) {
      registry.MarkReady(sandbox_id, language);
      return OkStatus();
    }
    answered = answered || kernels->reached == Reached::kYes;
    // An interpreter that already ran code for another language has registered its
    // kernels: one missing now is missing (docs/mapping.md, code readiness).
    const bool settled = kernels->reached == Reached::kYes && registry.AnyReady(sandbox_id);
    if (NowMillis() >= deadline || settled) {
      if (answered) {
        return MakeError(ErrorCode::kInvalidState, "the code interpreter of sandbox " + sandbox_id +
                                                       " has no kernel for language " + language);
      }
      return MakeError(ErrorCode::kTimeout,
                       "the code interpreter of sandbox " + sandbox_id + " did not answer within ready_timeout (" +
                           json::ToJson(rapidjson::Value(config_->ready_timeout_s)) +
                           " s); likely cause: the sandbox's entrypoint was replaced, so its Jupyter never "
                           "started (the code-interpreter image must run " +
                           kCodeInterpreterScript + ")");
    }
    if (!cancel->SleepFor(kReadinessPollInterval)) {
      return MakeError(ErrorCode::kCancelled, "code readiness check was cancelled");
    }
  }
}

Result<opensandbox::CodeContextInfo> CodeInterpreter::CreateContext(const std::string& sandbox_id,
                                                                    const std::string& language,
                                                                    const std::string& cwd,
                                                                    CancelToken* cancel) {
  if (!cwd.empty() && language != "python") {
    Error e = MakeError(ErrorCode::kUnsupported, "cwd is supported for python contexts only");
    e.field = "cwd";
    return e;
  }
  ABX_ASSIGN_OR_RETURN(auto execd, upstream_->Execd(sandbox_id, *config_, cancel));
  {
    Status st = EnsureReady(execd, sandbox_id, language, cancel);
    if (!st.ok()) return st.error();
  }
  ABX_ASSIGN_OR_RETURN(auto context, execd.CreateCodeContext(language, cwd, cancel));
  upstream_->code().RememberContext(sandbox_id, context.id, context.language.empty() ? language : context.language);
  if (!cwd.empty() && language == "python") {
    // execd only names the notebook after `cwd`; the kernel's directory is changed here.
    CodeRunSpec chdir;
    chdir.sandbox_id = sandbox_id;
    chdir.context_id = context.id;
    chdir.language = language;
    chdir.code = "import os as _abx_os\n_abx_os.makedirs(" + json::Quote(cwd) +
                 ", exist_ok=True)\n_abx_os.chdir(" + json::Quote(cwd) + ")\ndel _abx_os";
    struct Quiet : CodeSink {
      void OnOutput(bool, const std::string&) override {}
      void OnResult(const CodeResult&) override {}
    } quiet;
    auto changed = Run(chdir, cancel, &quiet);
    Error failed;
    if (!changed.ok()) failed = changed.error();
    else if (changed->error) failed = MakeError(ErrorCode::kInvalidState, "cannot use " + cwd + " as the working directory: " + changed->error->value);
    if (!changed.ok() || changed->error) {
      execd.DeleteCodeContext(context.id, nullptr);
      upstream_->code().ForgetQueue(sandbox_id, context.id);
      return failed;
    }
  }
  return context;
}

Result<std::vector<opensandbox::CodeContextInfo>> CodeInterpreter::ListContexts(
    const std::string& sandbox_id, const std::string& language, CancelToken* cancel) {
  ABX_ASSIGN_OR_RETURN(auto execd, upstream_->Execd(sandbox_id, *config_, cancel));
  return execd.ListCodeContexts(language, cancel);
}

Result<bool> CodeInterpreter::DeleteContext(const std::string& sandbox_id, const std::string& context_id,
                                            CancelToken* cancel) {
  ABX_ASSIGN_OR_RETURN(auto execd, upstream_->Execd(sandbox_id, *config_, cancel));
  ABX_ASSIGN_OR_RETURN(bool deleted, execd.DeleteCodeContext(context_id, cancel));
  upstream_->code().ForgetQueue(sandbox_id, context_id);
  return deleted;
}

Error CodeInterpreter::UnknownContext(const CodeRunSpec& spec) {
  upstream_->code().ForgetQueue(spec.sandbox_id, spec.context_id);
  return MakeError(ErrorCode::kNotFound,
                   "code context " + spec.context_id + " does not exist in sandbox " + spec.sandbox_id);
}

Result<Execution> CodeInterpreter::Run(const CodeRunSpec& spec, CancelToken* cancel, CodeSink* sink) {
  const int64_t arrival = NowMillis();
  const int64_t deadline = spec.timeout_s ? arrival + static_cast<int64_t>(*spec.timeout_s * 1000) : 0;
  ABX_ASSIGN_OR_RETURN(auto execd, upstream_->Execd(spec.sandbox_id, *config_, cancel));
  std::string language = spec.language;
  if (!spec.context_id.empty()) {
    // The context's own language: upstream runs an id without one as a shell command.
    // Known once seen (a context keeps its language); a context deleted behind the
    // bridge's back is then execd's "context not found", below.
    std::optional<std::string> known = upstream_->code().ContextLanguage(spec.sandbox_id, spec.context_id);
    if (!known) {
      ABX_ASSIGN_OR_RETURN(auto contexts, execd.ListCodeContexts("", cancel));
      for (const auto& c : contexts) upstream_->code().RememberContext(spec.sandbox_id, c.id, c.language);
      auto found = std::find_if(contexts.begin(), contexts.end(),
                                [&](const auto& c) { return c.id == spec.context_id; });
      if (found == contexts.end()) return UnknownContext(spec);
      known = found->language;
    }
    if (!language.empty() && language != *known) {
      return InvalidParams("language", "context " + spec.context_id + " runs " + *known + ", not " + language);
    }
    language = *known;
  } else {
    if (language.empty()) language = "python";
    Status st = EnsureReady(execd, spec.sandbox_id, language, cancel);
    if (!st.ok()) return st.error();
  }
  const std::string key = spec.context_id.empty() ? "default:" + language : spec.context_id;
  std::shared_ptr<RunQueue> queue = upstream_->code().Queue(spec.sandbox_id, key);
  {
    ABX_ASSIGN_OR_RETURN(std::shared_ptr<RunPlace> place, PlaceIn(queue, spec.place));
    Status st = place->Enter(deadline, cancel);
    if (!st.ok()) return st.error();
  }
  struct Turn {
    RunQueue* queue;
    bool settle = false;
    ~Turn() {
      // An IPython kernel started with stop_on_error (as execd starts every run) aborts
      // the requests that reach it in the moment after a run that raised: the next run
      // would come back empty. It waits that moment out.
      if (settle) std::this_thread::sleep_for(kSettleAfterErrorMs);
      queue->Leave();
    }
  } turn{queue.get()};
  // Its turn has come; nothing is sent for a run already cancelled or out of time.
  if (cancel->cancelled()) return MakeError(ErrorCode::kCancelled, "code.run was cancelled before it ran");
  if (deadline > 0 && NowMillis() >= deadline) {
    return MakeError(ErrorCode::kTimeout, "code.run timed out before its turn came (its timeout counts from arrival)");
  }

  const int64_t request_ms = static_cast<int64_t>(config_->request_timeout_s * 1000);
  const int64_t busy_until = deadline > 0 ? deadline : NowMillis() + request_ms;
  const std::string body = CodeBody(spec.code, spec.context_id, language);
  // While a leftover run of this queue is interrupted, a no-op asks whether the context is
  // free, so that the code itself never meets the kernel's abort after the interrupt.
  const std::string probe_body = CodeBody("pass", spec.context_id, language);
  bool probing = false;
  int unsent_tries = 0;
  int64_t last_interrupt = 0;
  for (;;) {
    Execution execution;
    execution.context_id = spec.context_id;
    Attempt attempt;
    bool saw_output = false, saw_init = false;
    {
      // Interrupts go out only after execd's init: before it, the request may not have
      // reached the kernel at all.
      Watchdog watchdog(&execd, cancel, deadline, kInterruptGraceMs);
      attempt.status = execd.RunCode(probing ? probe_body : body, watchdog.stream_cancel(), request_ms,
                                     [&](const ExecdEvent& e) {
        if (e.kind == ExecdEventKind::kUntyped) {
          attempt.bare_code = e.code;
          attempt.bare_message = e.message;
          return true;
        }
        if (probing && e.type != "init") return true;
        if (e.type == "init") {
          saw_init = true;
          if (execution.context_id.empty()) {
            execution.context_id = e.text;
            upstream_->code().LinkQueue(spec.sandbox_id, key, e.text);
          }
          watchdog.ContextKnown(execution.context_id);
        } else if (e.type == "stdout" || e.type == "stderr") {
          saw_output = true;
          const bool is_stderr = e.type == "stderr";
          AppendCapped(is_stderr ? &execution.stderr_data : &execution.stdout_data, e.text,
                       &execution.truncated);
          sink->OnOutput(is_stderr, e.text);
        } else if (e.type == "execution_count") {
          execution.execution_count = e.execution_count;
        } else if (e.type == "result") {
          saw_output = true;
          CodeResult result;
          result.data_json = ResultData(e.results_json, kCodeOutputBytes, &execution.truncated);
          sink->OnResult(result);
          execution.results.push_back(std::move(result));
        } else if (e.type == "error" && e.error) {
          execution.error = CodeError{e.error->ename, e.error->evalue, e.error->traceback};
        } else if (e.type == "execution_complete") {
          attempt.complete = true;
        }
        return true;
      });
      if (watchdog.unresponsive()) {
        Error stuck = MakeError(ErrorCode::kInvalidState,
                                "the kernel of code context " + execution.context_id +
                                    " does not respond to interrupt; delete the context");
        queue->Poison(stuck);
        return stuck;
      }
      if (watchdog.interrupted_for_cancel()) {
        turn.settle = true;  // the interrupt raised in the kernel
        return MakeError(ErrorCode::kCancelled,
                         "code.run was cancelled: the kernel was interrupted and the context keeps its state");
      }
      execution.timed_out = watchdog.timed_out();
    }
    if (probing && attempt.status.ok() && !Contains(attempt.bare_message, "busy")) {
      // The leftover has ended and the context is free. An IPython kernel aborts what
      // reaches it in the moment after the leftover's KeyboardInterrupt: waited out.
      queue->leftover() = {};
      probing = false;
      if (!cancel->SleepFor(kSettleAfterErrorMs)) return MakeError(ErrorCode::kCancelled, "code.run was cancelled");
      if (deadline > 0 && NowMillis() >= deadline) {
        return MakeError(ErrorCode::kTimeout,
                         "code.run timed out while an earlier run of its context, whose stream broke off, was "
                         "interrupted");
      }
      continue;
    }
    if (!attempt.status.ok()) {
      const Error& e = attempt.status.error();
      if (e.http_status == 500 && Contains(e.message, "context not found")) return UnknownContext(spec);
      // The stream broke off after execd took the run: the kernel may still be running it.
      if (saw_init && !probing) queue->leftover() = {execution.context_id, 0};
      return e;
    }
    if (Contains(attempt.bare_message, "context not found") && !saw_output) return UnknownContext(spec);
    if (!attempt.bare_message.empty() || !attempt.bare_code.empty()) {
      // execd could not open its connection to the kernel (a Jupyter server slow to serve
      // many fresh kernels at once answers its WebSocket late): the code was never sent,
      // so it is sent again, as for a busy context.
      // A Jupyter that is gone answers so too: a few tries only.
      const bool unsent = Contains(attempt.bare_message, "failed to connect to kernel") && !saw_output;
      if (unsent && ++unsent_tries < kUnsentTries && NowMillis() + kBusyRetryInterval.count() < busy_until &&
          cancel->SleepFor(kBusyRetryInterval)) {
        continue;
      }
      if (unsent && cancel->cancelled()) return MakeError(ErrorCode::kCancelled, "code.run was cancelled");
      RunQueue::Leftover& leftover = queue->leftover();
      if (Contains(attempt.bare_message, "busy") && !saw_output && !leftover.context_id.empty()) {
        // What holds the context is a run of this queue whose stream broke off: it is
        // interrupted, as a cancel would, once a second, and the context is given the
        // interrupt's grace from the first one, across the runs that meet it.
        const int64_t now = NowMillis();
        if (leftover.interrupted_since_ms == 0) leftover.interrupted_since_ms = now;
        if (now - leftover.interrupted_since_ms >= kInterruptGraceMs) {
          Error stuck = MakeError(ErrorCode::kInvalidState,
                                  "the kernel of code context " + leftover.context_id +
                                      " does not respond to interrupt; delete the context");
          queue->Poison(stuck);
          return stuck;
        }
        if (now - last_interrupt >= kReinterruptInterval.count()) {
          last_interrupt = now;
          Status sent = execd.InterruptCode(leftover.context_id, cancel);
          if (!sent.ok()) {
            log::Warn("code.interrupt_failed", {{"context_id", leftover.context_id}, {"error", sent.error().message}});
          }
        }
        if (now + kBusyRetryInterval.count() < busy_until && cancel->SleepFor(kBusyRetryInterval)) {
          probing = true;
          continue;
        }
        if (cancel->cancelled()) return MakeError(ErrorCode::kCancelled, "code.run was cancelled");
        Error busy = MakeError(ErrorCode::kInvalidState, "code context " + leftover.context_id +
                                                             " is still busy with an earlier run whose stream broke "
                                                             "off; it was interrupted: try again");
        busy.retryable = true;
        return busy;
      }
      if (Contains(attempt.bare_message, "busy") && !saw_output) {
        // Another client's run holds the context: try again within the run's time.
        if (NowMillis() + kBusyRetryInterval.count() < busy_until && cancel->SleepFor(kBusyRetryInterval)) continue;
        if (cancel->cancelled()) return MakeError(ErrorCode::kCancelled, "code.run was cancelled");
        Error busy = MakeError(ErrorCode::kInvalidState,
                               "code context " + execution.context_id + " is busy with a run of another client");
        busy.retryable = true;
        return busy;
      }
      return MakeError(ErrorCode::kUpstream, "the code run failed: " + attempt.bare_message);
    }
    turn.settle = execution.error.has_value();
    if (!attempt.complete && !execution.error && execution.results.empty() && !execution.timed_out) {
      if (saw_init) queue->leftover() = {execution.context_id, 0};
      return MakeError(ErrorCode::kUpstream,
                       "the code run ended without a result; the context's state may be lost (its kernel "
                       "may have died)");
    }
    queue->leftover() = {};
    return execution;
  }
}

}  // namespace abx::core
