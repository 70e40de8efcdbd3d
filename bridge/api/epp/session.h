#pragma once
// One EPP/1 host session on the bridge: the JSON-RPC state machine (initialize first,
// shutdown, exit, $/cancel), concurrency (every request starts at once on a thread of the
// bridge's request pool, so requests pipeline and answer out of order) and the end of the
// host (cancel attached commands, then wait for every handler). Method semantics live in
// methods_*.cc.

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include <rapidjson/document.h>

#include "bridge/api/epp/local_files.h"
#include "bridge/base/cancel.h"
#include "bridge/base/error.h"
#include "bridge/base/serial_lanes.h"
#include "bridge/base/task_runner.h"
#include "bridge/core/config.h"
#include "bridge/core/files/watch_hub.h"

namespace abx::core {
class TerminalHolder;
class BridgeCore;
class EndpointCache;
class RunPlace;
}  // namespace abx::core

namespace abx::epp {

// Where the session's output lines go, in order; thread-safe. Write returns false once
// the host can no longer be reached. Also the way to the shim's local files.
class LineSink {
 public:
  virtual ~LineSink() = default;
  virtual bool Write(std::string line, std::string response_id) = 0;
  // Asks the shim to work on a local file (local_files.h) and waits for its answer, for
  // `cancel`, or for the session's input to end. Without a shim behind the sink: E8004.
  virtual Result<LocalFileReply> AskShim(const LocalFileRequest& request, CancelToken* cancel);
  // The same without an answer (a discard).
  virtual void TellShim(const LocalFileRequest& /*request*/) {}
  // Whether AskShim can work at all; else the E8004 a transfer answers before anything
  // is sent upstream.
  virtual Status CanReachLocalFiles();
};

struct SessionOrigin {
  std::map<std::string, std::string> config;  // raw, as the shim resolved it
  std::map<std::string, std::string> config_source;
  std::string shim_version;
  std::string replay_initialize;  // non-empty: already initialized on another bridge
  int shim_pid = 0;
};

class EarlyWrite;
class Session;
class WatchListenerOfSession;  // methods.h

// One request in flight: its params, its cancellation, and the way to answer it.
class Request {
 public:
  Request(Session* session, std::string id_json, std::string method,
          std::shared_ptr<rapidjson::Document> doc, const rapidjson::Value* params,
          std::shared_ptr<EarlyWrite> early_write = nullptr);
  ~Request();  // drops an early write its handler did not adopt

  const std::string& method() const { return method_; }
  const std::string& id_json() const { return id_json_; }
  // The params object; an empty object when the request had none.
  const rapidjson::Value& params() const;
  CancelToken& cancel() { return cancel_; }
  Session& session() { return *session_; }

  // Answers once; later answers are ignored. Returns false if already answered.
  bool Respond(std::string_view result_json);
  // The same for a whole line made with ResponseStart/End (no further copy).
  bool RespondLine(std::string line);
  bool Fail(const Error& error);
  bool answered() const { return answered_.load(); }
  // Whether it runs a command the host is attached to (AttachesHost, methods.h): end of
  // stdin cancels it. Known from the moment it is dispatched, so an end of stdin that
  // comes before its handler runs still reaches it.
  bool attached() const { return attached_; }
  // files.write: the upload that started while the line arrived (early_write.h), if any.
  EarlyWrite* early_write() const { return early_write_.get(); }
  // Sends a notification belonging to this request (exec.output, $/progress …).
  void Notify(std::string_view method, std::string_view params_json);
  // The same for a whole line made with NotificationStart/End (no further copy).
  void NotifyLine(std::string line);
  // The place in line of a shell command or a code run, taken as the line arrived
  // (Session::Dispatch); null for other requests. Its handler takes it into the run.
  // A line that was full when the request arrived is that error (E8007, retryable).
  Result<std::shared_ptr<core::RunPlace>> TakeRunPlace() {
    if (run_place_error_) return *run_place_error_;
    return std::move(run_place_);
  }
  void set_run_place(Result<std::shared_ptr<core::RunPlace>> place) {
    if (place.ok()) {
      run_place_ = std::move(place).value();
    } else {
      run_place_error_ = place.error();
    }
  }

 private:
  Session* session_;
  std::string id_json_;
  std::string method_;
  std::shared_ptr<rapidjson::Document> doc_;
  const rapidjson::Value* params_;
  std::shared_ptr<EarlyWrite> early_write_;
  std::shared_ptr<core::RunPlace> run_place_;
  std::optional<Error> run_place_error_;
  CancelToken cancel_;
  std::atomic<bool> answered_{false};
  const bool attached_;
};

class Session {
 public:
  // `pool` runs the requests; it and `core` outlive the session.
  Session(core::BridgeCore* core, TaskRunner* pool, SessionOrigin origin, LineSink* sink);
  ~Session();  // waits for every handler

  // Lines in the order the host wrote them. `early_write`: the upload that started while
  // the line arrived; handed to the request if the line is that files.write, else dropped.
  void OnLine(std::string line, std::shared_ptr<EarlyWrite> early_write = nullptr);
  // Starts an early write for a line that begins with `first_bytes` (the line's buffer,
  // which EarlyWrite::Update keeps current); nullptr when there is none to start.
  std::shared_ptr<EarlyWrite> StartEarlyWrite(std::string_view first_bytes);
  void OnOversizedLine(const std::string& prefix, int64_t length);
  // End of stdin: the host is gone, so the commands it attached to are cancelled
  // (docs/epp1.md §1); other requests may still finish and be answered.
  void OnEndOfInput();
  // The shim itself went away (or `exit`): cancel everything in flight.
  void OnHostGone();
  // A code context or shell made with keep: false: it goes with the session.
  void OwnCodeContext(const std::string& sandbox_id, const std::string& context_id);
  void OwnShell(const std::string& sandbox_id, const std::string& shell_id);
  // Deletes them (docs/epp1.md §2: at the end of input, whichever way the session ends);
  // called once no handler runs. Blocks for the execd calls.
  void ReleaseOwned();
  // This session as the holder of the terminals it opens or attaches, made on first use.
  std::shared_ptr<core::TerminalHolder> terminal_holder();
  // This session as the listener of its watches, made on first use; its watches are
  // stopped at its end (ReleaseOwned).
  std::shared_ptr<core::WatchListener> watch_listener();
  void OwnWatch(const std::string& watch_id);
  void AnnounceWatch(const std::string& watch_id);
  void DisownWatch(const std::string& watch_id);
  // Blocks until no handler runs.
  void WaitIdle();
  // The same, for at most `timeout`; false when handlers still run.
  bool WaitIdleFor(std::chrono::milliseconds timeout);

  bool exit_requested() const { return exit_requested_.load(); }
  bool initialized() const { return initialized_.load(); }

  // State shared by the method handlers.
  core::BridgeCore& core() { return *core_; }
  const core::ProviderConfig& config() const { return config_; }
  const SessionOrigin& origin() const { return origin_; }
  std::shared_ptr<core::EndpointCache> upstream() const { return upstream_; }
  LineSink& sink() { return *sink_; }

 private:
  void Dispatch(std::string id_json, std::string method, std::shared_ptr<rapidjson::Document> doc,
                const rapidjson::Value* params, std::shared_ptr<EarlyWrite> early_write = nullptr);
  Status Initialize(const rapidjson::Value* params, std::string* result_json);
  void HandleCancel(const rapidjson::Value* params);
  void CancelWhere(bool attached_only);

  core::BridgeCore* core_;
  TaskRunner* pool_;
  // A terminal's input, resizes and signals, in the order the host sent them.
  SerialLanes terminal_lanes_{pool_};
  SessionOrigin origin_;
  LineSink* sink_;
  core::ProviderConfig config_;
  std::shared_ptr<core::EndpointCache> upstream_;
  std::atomic<bool> initialized_{false};
  std::atomic<bool> shutting_down_{false};
  std::atomic<bool> exit_requested_{false};

  std::mutex mu_;
  std::condition_variable idle_cv_;
  std::map<std::string, std::shared_ptr<Request>> in_flight_;  // by id JSON
  int running_ = 0;  // requests whose handler has not returned
  std::vector<std::pair<std::string, std::string>> owned_contexts_;  // sandbox, context
  std::vector<std::pair<std::string, std::string>> owned_shells_;    // sandbox, shell
  std::shared_ptr<core::TerminalHolder> terminal_holder_;
  std::shared_ptr<WatchListenerOfSession> watch_listener_;
  std::vector<std::string> owned_watches_;
};

}  // namespace abx::epp
