#include "bridge/api/epp/session.h"

#include <algorithm>
#include <vector>

#include "bridge/api/epp/early_write.h"
#include "bridge/api/epp/features.h"
#include "bridge/api/epp/jsonrpc.h"
#include "bridge/api/epp/methods.h"
#include "bridge/api/epp/write_prefix.h"
#include "bridge/base/error_codes.h"
#include "bridge/base/json.h"
#include "bridge/base/log.h"
#include "bridge/base/utf8.h"
#include "bridge/core/bridge_core.h"
#include "bridge/core/code/code.h"
#include "bridge/core/exec/shells.h"
#include "bridge/core/files/watches.h"
#include "bridge/core/run_queue.h"
#include "bridge/core/sandboxes/warm_pool.h"
#include "bridge/core/terminals/terminals.h"
#include "common/version.h"

namespace abx::epp {
namespace {

const rapidjson::Value& EmptyObject() {
  static const rapidjson::Value* kEmpty = new rapidjson::Value(rapidjson::kObjectType);
  return *kEmpty;
}

std::string InitializeResult() {
  std::string r = "{\"protocol\":\"EPP/1\",\"provider\":{\"name\":";
  r += Quote(kProviderName) + ",\"version\":" + Quote(kProviderVersion) + "},\"features\":[";
  bool first = true;
  for (const char* f : kFeatures) {
    r += (first ? "" : ",") + Quote(f);
    first = false;
  }
  r += "],\"partial\":" + PartialJson() + ",\"extensions\":[";
  first = true;
  for (const char* e : kExtensions) {
    r += (first ? "" : ",") + Quote(e);
    first = false;
  }
  r += "],\"limits\":{\"max_line_bytes\":" + std::to_string(kMaxLineBytes) +
       ",\"max_read_bytes\":" + std::to_string(kMaxReadBytes) +
       ",\"pty_buffer_bytes\":" + std::to_string(kPtyBufferBytes) +
       ",\"code_output_bytes\":" + std::to_string(kCodeOutputBytes) + "}}";
  return r;
}

}  // namespace

Request::Request(Session* session, std::string id_json, std::string method,
                 std::shared_ptr<rapidjson::Document> doc, const rapidjson::Value* params,
                 std::shared_ptr<EarlyWrite> early_write)
    : session_(session),
      id_json_(std::move(id_json)),
      method_(std::move(method)),
      doc_(std::move(doc)),
      params_(params),
      early_write_(std::move(early_write)),
      attached_(AttachesHost(method_, this->params())) {}

Request::~Request() {
  if (early_write_) early_write_->Abandon();  // after an Adopt: nothing left to drop
}

const rapidjson::Value& Request::params() const {
  return params_ && params_->IsObject() ? *params_ : EmptyObject();
}

bool Request::Respond(std::string_view result_json) {
  if (answered_.exchange(true)) return false;
  session_->sink().Write(ResponseLine(id_json_, result_json), id_json_);
  return true;
}

bool Request::RespondLine(std::string line) {
  if (answered_.exchange(true)) return false;
  session_->sink().Write(std::move(line), id_json_);
  return true;
}

bool Request::Fail(const Error& error) {
  if (answered_.exchange(true)) return false;
  // One line per failed request, with the ids that tie it to the host's transcript
  // (JSON-RPC id, shim pid) and to the server's logs (X-Request-ID).
  const std::string_view epp_code = EppCodeName(error.code);
  log::Warn("request.failed",
                  {{"method", ToValidUtf8(method_)},
                   {"id", ToValidUtf8(id_json_)},
                   {"shim_pid", std::to_string(session_->origin().shim_pid)},
                   {"code", epp_code.empty() ? std::to_string(JsonRpcCode(error.code))
                                             : std::string(epp_code)},
                   {"request_id", ToValidUtf8(error.request_id)},
                   {"http_status", std::to_string(error.http_status)},
                   {"error", ToValidUtf8(error.message)}});
  session_->sink().Write(ErrorLine(id_json_, error), id_json_);
  return true;
}

void Request::Notify(std::string_view method, std::string_view params_json) {
  session_->sink().Write(NotificationLine(method, params_json), "");
}

void Request::NotifyLine(std::string line) { session_->sink().Write(std::move(line), ""); }

Result<LocalFileReply> LineSink::AskShim(const LocalFileRequest& /*request*/, CancelToken* /*cancel*/) {
  return MakeError(ErrorCode::kUnsupported, "this session has no shim to open local files");
}

Status LineSink::CanReachLocalFiles() {
  return MakeError(ErrorCode::kUnsupported, "this session has no shim to open local files");
}

Session::Session(core::BridgeCore* core, TaskRunner* pool, SessionOrigin origin,
                 LineSink* sink)
    : core_(core), pool_(pool), origin_(std::move(origin)), sink_(sink) {
  if (!origin_.replay_initialize.empty()) {
    std::string id_json, ignored;
    auto env = ParseEnvelope(origin_.replay_initialize, &id_json);
    if (env.ok()) Initialize(env->params, &ignored);
  }
}

Session::~Session() {
  OnHostGone();
  WaitIdle();
}

std::shared_ptr<EarlyWrite> Session::StartEarlyWrite(std::string_view first_bytes) {
  if (!initialized_ || shutting_down_ || exit_requested_) return nullptr;
  auto prefix = ReadWritePrefix(first_bytes);
  if (!prefix) return nullptr;
  return EarlyWrite::Start(*prefix, core_, upstream_, config_, pool_, first_bytes);
}

void Session::OnLine(std::string line, std::shared_ptr<EarlyWrite> early_write) {
  // Every way out but a files.write dispatched with it drops the early write.
  struct DropUnlessTaken {
    std::shared_ptr<EarlyWrite>& write;
    ~DropUnlessTaken() {
      if (write) write->Abandon();
    }
  } drop{early_write};
  std::string id_json;
  auto parsed = ParseEnvelope(std::move(line), &id_json);
  if (!parsed.ok()) {
    sink_->Write(ErrorLine(id_json, parsed.error()), id_json);
    return;
  }
  Envelope& env = parsed.value();
  if (!env.has_id) {  // a notification: never answered
    if (env.method == "exit") {
      exit_requested_ = true;
      OnHostGone();
    } else if (env.method == "$/cancel") {
      HandleCancel(env.params);
    }
    return;
  }
  auto fail = [&](Error error) { sink_->Write(ErrorLine(env.id_json, error), env.id_json); };
  if (env.method == "initialize") {
    std::string result;
    Status st = Initialize(env.params, &result);
    if (st.ok()) {
      sink_->Write(ResponseLine(env.id_json, result), env.id_json);
    } else {
      fail(st.error());
    }
    return;
  }
  if (!initialized_) {
    return fail(MakeError(ErrorCode::kNotInitialized,
                                "initialize must be the first request"));
  }
  if (shutting_down_) {
    return fail(MakeError(ErrorCode::kNotInitialized,
                                "the session is shutting down and accepts no more requests"));
  }
  if (env.method == "shutdown") {
    shutting_down_ = true;
    Dispatch(env.id_json, env.method, env.doc, env.params);
    return;
  }
  if (IsUnsupported(env.method)) {
    return fail(MakeError(ErrorCode::kUnsupported,
                                env.method + " is not supported by the opensandbox provider"));
  }
  if (!FindHandler(env.method)) {
    return fail(MakeError(ErrorCode::kMethodNotFound, "unknown method " + env.method));
  }
  std::shared_ptr<EarlyWrite> taken;
  if (env.method == "files.write") taken = std::move(early_write);
  Dispatch(env.id_json, env.method, env.doc, env.params, std::move(taken));
}

void Session::OnOversizedLine(const std::string& prefix, int64_t length) {
  const std::string id_json = RecoverId(prefix);
  Error error = MakeError(
      ErrorCode::kTooLarge, "the line is " + std::to_string(length) +
                                      " bytes; EPP/1 lines are at most " +
                                      std::to_string(kMaxLineBytes) + " bytes");
  sink_->Write(ErrorLine(id_json, error), id_json);
}

Status Session::Initialize(const rapidjson::Value* params, std::string* result_json) {
  if (initialized_) {
    return MakeError(ErrorCode::kInvalidRequest, "the session is already initialized");
  }
  std::string protocol;
  if (params && params->IsObject()) {
    auto it = params->FindMember("protocol");
    if (it != params->MemberEnd() && it->value.IsString()) protocol = it->value.GetString();
  }
  if (protocol != "EPP/1") {
    return MakeError(ErrorCode::kNotInitialized,
                           "protocol " + (protocol.empty() ? std::string("(none)") : protocol) +
                               " is not spoken here; this provider speaks EPP/1");
  }
  auto config = core::ParseConfig(origin_.config);
  if (!config.ok()) return config.error().Within("configuration");
  config_ = std::move(config).value();
  upstream_ = core_->EndpointCacheFor(config_);
  // The session's `pool` is the daemon's from now on, for its server and credential.
  WarmPoolOf(*core_).Configure(config_);
  initialized_ = true;
  *result_json = InitializeResult();
  return OkStatus();
}

void Session::HandleCancel(const rapidjson::Value* params) {
  if (!params || !params->IsObject()) return;
  auto it = params->FindMember("id");
  if (it == params->MemberEnd()) return;
  const std::string target = ToJson(it->value);
  std::shared_ptr<Request> request;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto found = in_flight_.find(target);
    if (found != in_flight_.end()) request = found->second;
  }
  if (request) request->cancel().Cancel();
}

namespace {

// The line a request takes its place in as it arrives, here on the session's reader, so
// that requests sent one after another run in that order whatever the pool's threads do
// (docs/epp1.md §3: the runs of a code context, the commands of a shell, the writes to
// a command's stdin). A request whose
// params name no such line takes none here; one that names it wrongly learns so from its
// handler, which gives the place up; one that finds the line full fails with that.
Result<std::shared_ptr<core::RunPlace>> PlaceInLine(core::EndpointCache* upstream, const std::string& method,
                                                    const rapidjson::Value* params) {
  if (!upstream || !params || !params->IsObject()) return std::shared_ptr<core::RunPlace>();
  auto text = [params](const char* key) -> std::string {
    const rapidjson::Value* value = json::GetMember(*params, key);
    return value && value->IsString() ? value->GetString() : "";
  };
  const std::string sandbox = text("sandbox_id");
  if (sandbox.empty()) return std::shared_ptr<core::RunPlace>();
  std::shared_ptr<core::RunQueue> queue;
  if ((method == "exec.start" || method == "exec.run") && !text("shell_id").empty()) {
    queue = upstream->shells().Queue(sandbox, text("shell_id"));
  } else if (method == "process.stdin") {
    queue = upstream->stdin_pipes().Queue(sandbox, text("exec_id"));
  } else if (method == "code.run") {
    const std::string context = text("context_id");
    const std::string language = text("language");
    queue = upstream->code().Queue(sandbox, !context.empty() ? context : "default:" + (language.empty() ? "python" : language));
  }
  if (!queue) return std::shared_ptr<core::RunPlace>();
  return core::RunPlace::Take(std::move(queue));  // a full line: the request's error
}

}  // namespace

void Session::Dispatch(std::string id_json, std::string method,
                       std::shared_ptr<rapidjson::Document> doc, const rapidjson::Value* params,
                       std::shared_ptr<EarlyWrite> early_write) {
  auto request = std::make_shared<Request>(this, id_json, std::move(method), std::move(doc), params,
                                           std::move(early_write));
  request->set_run_place(PlaceInLine(upstream_.get(), request->method(), params));
  {
    std::lock_guard<std::mutex> lock(mu_);
    ++running_;
    // A duplicate id replaces the older entry for $/cancel; both still get answered.
    in_flight_[id_json] = request;
  }
  core_->CountRequest();
  auto run = [this, request] {
    Result<std::string> result = std::string("null");
    if (request->method() == "shutdown") {
      // Stop accepting (done by the caller), cancel what is in flight, wait, answer.
      OnHostGone();  // cancels this request's own token too, which nothing watches
      std::unique_lock<std::mutex> lock(mu_);
      idle_cv_.wait(lock, [&] { return running_ == 1; });
    } else {
      result = FindHandler(request->method())(*request);
    }
    if (result.ok()) {
      request->Respond(result.value());
    } else {
      request->Fail(result.error());
    }
    std::lock_guard<std::mutex> lock(mu_);
    auto it = in_flight_.find(request->id_json());
    if (it != in_flight_.end() && it->second == request) in_flight_.erase(it);
    --running_;
    idle_cv_.notify_all();
  };
  // Keystrokes a host sends without waiting for their answers keep their order: the
  // requests of one terminal run one after another (a valid pty_id is a string; any
  // other request starts at once).
  const std::string& name = request->method();
  if (name == "pty.input" || name == "pty.resize" || name == "pty.signal") {
    const rapidjson::Value* pty = params && params->IsObject() ? json::GetMember(*params, "pty_id") : nullptr;
    const rapidjson::Value* sandbox = params && params->IsObject() ? json::GetMember(*params, "sandbox_id") : nullptr;
    if (pty && pty->IsString() && sandbox && sandbox->IsString()) {
      terminal_lanes_.Run(std::string(sandbox->GetString()) + "\n" + pty->GetString(), std::move(run));
      return;
    }
  }
  pool_->Run(std::move(run));
}

void Session::OnEndOfInput() { CancelWhere(/*attached_only=*/true); }

void Session::ReleaseOwned() {
  std::vector<std::pair<std::string, std::string>> contexts, shells;
  std::vector<std::string> watches;
  std::shared_ptr<WatchListenerOfSession> watch_listener;
  {
    std::lock_guard<std::mutex> lock(mu_);
    contexts.swap(owned_contexts_);
    shells.swap(owned_shells_);
    watches.swap(owned_watches_);
    watch_listener = watch_listener_;
  }
  if (!upstream_) return;
  // Watches stop, and what is still on its way to the session is dropped.
  core::Watches watch_api(core_, upstream_.get(), &config_);
  for (const std::string& watch_id : watches) watch_api.Unwatch(watch_id);
  if (watch_listener) watch_listener->Close();
  std::shared_ptr<core::TerminalHolder> holder;
  {
    std::lock_guard<std::mutex> lock(mu_);
    holder = terminal_holder_;
  }
  // Held terminals: those opened without keep are closed, the others let go of.
  if (holder) core::Terminals(upstream_.get(), &config_).Release(holder.get());
  core::CodeInterpreter code(upstream_.get(), &config_);
  for (const auto& [sandbox_id, context_id] : contexts) {
    CancelToken uncancellable;  // bounded by request_timeout
    auto deleted = code.DeleteContext(sandbox_id, context_id, &uncancellable);
    if (!deleted.ok()) {
      log::Warn("code.context_cleanup_failed",
                {{"sandbox_id", sandbox_id}, {"context_id", context_id}, {"error", deleted.error().message}});
    }
  }
  core::Shells shell_api(core_, upstream_.get(), &config_);
  for (const auto& [sandbox_id, shell_id] : shells) {
    CancelToken uncancellable;  // bounded by request_timeout
    auto closed = shell_api.Close(sandbox_id, shell_id, &uncancellable);
    if (!closed.ok()) {
      log::Warn("shell.cleanup_failed",
                {{"sandbox_id", sandbox_id}, {"shell_id", shell_id}, {"error", closed.error().message}});
    }
  }
}

void Session::OwnCodeContext(const std::string& sandbox_id, const std::string& context_id) {
  std::lock_guard<std::mutex> lock(mu_);
  owned_contexts_.emplace_back(sandbox_id, context_id);
}

std::shared_ptr<core::TerminalHolder> Session::terminal_holder() {
  std::lock_guard<std::mutex> lock(mu_);
  if (!terminal_holder_) terminal_holder_ = MakeTerminalHolder(sink_);
  return terminal_holder_;
}

std::shared_ptr<core::WatchListener> Session::watch_listener() {
  std::lock_guard<std::mutex> lock(mu_);
  if (!watch_listener_) watch_listener_ = MakeWatchListener(sink_);
  return watch_listener_;
}

void Session::OwnWatch(const std::string& watch_id) {
  std::lock_guard<std::mutex> lock(mu_);
  owned_watches_.push_back(watch_id);
}

void Session::AnnounceWatch(const std::string& watch_id) {
  std::shared_ptr<WatchListenerOfSession> listener;
  {
    std::lock_guard<std::mutex> lock(mu_);
    listener = watch_listener_;
  }
  if (listener) listener->Announce(watch_id);
}

void Session::DisownWatch(const std::string& watch_id) {
  std::lock_guard<std::mutex> lock(mu_);
  owned_watches_.erase(std::remove(owned_watches_.begin(), owned_watches_.end(), watch_id), owned_watches_.end());
}

void Session::OwnShell(const std::string& sandbox_id, const std::string& shell_id) {
  std::lock_guard<std::mutex> lock(mu_);
  owned_shells_.emplace_back(sandbox_id, shell_id);
}

void Session::OnHostGone() { CancelWhere(/*attached_only=*/false); }

void Session::CancelWhere(bool attached_only) {
  // Cancel outside the lock: cancel hooks may talk to execd.
  std::vector<std::shared_ptr<Request>> requests;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (auto& [id, request] : in_flight_) {
      if (!attached_only || request->attached()) requests.push_back(request);
    }
  }
  for (auto& request : requests) request->cancel().Cancel();
}

void Session::WaitIdle() {
  std::unique_lock<std::mutex> lock(mu_);
  idle_cv_.wait(lock, [&] { return running_ == 0; });
}

bool Session::WaitIdleFor(std::chrono::milliseconds timeout) {
  std::unique_lock<std::mutex> lock(mu_);
  return idle_cv_.wait_for(lock, timeout, [&] { return running_ == 0; });
}

}  // namespace abx::epp
