#pragma once

// The host end of an EPP/1 session inside the test process: a real epp::Session over a
// real core::BridgeCore, fed lines the way the gRPC adapter (bridge/api/grpc/epp_service.cc)
// feeds them, writing to a sink that files every line (responses by id, notifications by
// method and exec_id) and checks the contract as each line arrives.
//
// Why in-process: Debian's gRPC, protobuf and abseil are not built for ThreadSanitizer,
// so any test that goes through gRPC drowns in reports TSan cannot tell apart
// (docs/RELIABILITY.md, Sanitizers). Here the only threads are the bridge's own
// (request threads, cancel hooks, the HTTP client's I/O thread) and the test's, so TSan
// sees every lock and every handover. The upstream is still the real fake server process.

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "bridge/api/epp/session.h"
#include "bridge/core/bridge_core.h"
#include "tests/e2e/epp_session.h"

namespace abx::epp::testing {

using Clock = std::chrono::steady_clock;
using Millis = std::chrono::milliseconds;
using e2e::Message;
using e2e::MessagePtr;

// What a session writes, filed for the test. Thread-safe: the session writes from every
// request thread at once.
class RecordingSink final : public LineSink {
 public:
  bool Write(std::string line, std::string response_id) override;

  // From now on every Write fails, as once the host's stream is gone. Lines still
  // written are counted (late_writes), not filed.
  void Disconnect();
  // Runs before each exec.output is taken, on the writing thread: a host that reads
  // slowly (or not at all until `hook` returns).
  void set_before_output(std::function<void()> hook);

  // The first answer to `id_json`; null after `timeout`.
  MessagePtr WaitResponse(const std::string& id_json, Millis timeout);
  std::vector<MessagePtr> ResponsesFor(const std::string& id_json) const;
  // Notifications whose params.exec_id is `exec_id`, in arrival order.
  std::vector<MessagePtr> Notifications(const std::string& exec_id) const;
  std::vector<MessagePtr> NotificationsByMethod(const std::string& method) const;
  // The first notification `method` for `exec_id`; null after `timeout`.
  MessagePtr WaitNotification(const std::string& exec_id, const std::string& method,
                              Millis timeout);
  // Every line so far, in arrival order.
  std::vector<MessagePtr> All() const;
  size_t late_writes() const;

  // Contract breaks seen so far, one line each: a line that is not one JSON-RPC 2.0
  // object, a response whose response_id tag is not its id (the shim routes answers by
  // that tag), a notification tagged as a response.
  std::vector<std::string> Problems() const;

 private:
  mutable std::mutex mu_;
  std::shared_ptr<const std::function<void()>> before_output_;
  std::condition_variable changed_;
  bool disconnected_ = false;
  size_t late_writes_ = 0;
  std::vector<MessagePtr> all_;
  std::map<std::string, std::vector<MessagePtr>> responses_;   // by id JSON
  std::map<std::string, std::vector<MessagePtr>> by_exec_id_;  // notifications
  std::map<std::string, std::vector<MessagePtr>> by_method_;   // notifications
  std::vector<std::string> problems_;
};

// The notifications of one attached exec.start, checked against docs/epp1.md §3: exec.output
// seq from 0 rising by one, stream stdout|stderr; exactly one exec.exit and nothing after
// it; none of it before the exec.start answer.
struct ExecTrace {
  std::string stdout_data;
  std::string stderr_data;
  MessagePtr exit;  // null when none came in time
  size_t output_count = 0;
  std::vector<std::string> problems;
};
// Waits up to `timeout` for the exec.exit of `exec_id`, then `settle` for anything that
// (wrongly) follows it. `response` is the exec.start answer.
ExecTrace TraceExec(const RecordingSink& sink, const std::string& exec_id,
                    const MessagePtr& response, Millis timeout, Millis settle = Millis(200));

class InProcessHost {
 public:
  // A session over `core` with `config` (field → raw text, as a shim resolves it).
  InProcessHost(core::BridgeCore* core, std::map<std::string, std::string> config);
  ~InProcessHost();  // destroys the session if still there
  InProcessHost(const InProcessHost&) = delete;
  InProcessHost& operator=(const InProcessHost&) = delete;

  // One thread at a time feeds a session (the adapter's reader thread): call these from
  // the thread that drives this host.
  // Sends {"jsonrpc":"2.0","id":N,"method":...,"params":...}; returns the id JSON, "N".
  std::string Send(const std::string& method, const std::string& params_json = "{}");
  void Notify(const std::string& method, const std::string& params_json = "{}");
  // Send + wait for the answer; null on timeout.
  MessagePtr Call(const std::string& method, const std::string& params_json, Millis timeout);
  MessagePtr Initialize();
  void CancelRequest(const std::string& id_json);
  // End of stdin: the commands the host is attached to are cancelled.
  void EndOfInput();

  // What the adapter does when the host's stream ends: destroys the session, which
  // cancels everything in flight and waits for every handler. Returns how long it took.
  Millis DestroySession();

  Session* session() { return session_.get(); }
  RecordingSink& sink() { return sink_; }

  // Every id sent that has no answer or more than one, and answers to ids never sent.
  std::vector<std::string> AnswerProblems() const;

 private:
  RecordingSink sink_;  // declared first: outlives the session
  std::unique_ptr<Session> session_;
  int64_t next_id_ = 1;
  mutable std::mutex mu_;
  std::vector<std::string> sent_ids_;
};

// Problems as one string, for a failure message ("" when none).
std::string Join(const std::vector<std::string>& problems);

}  // namespace abx::epp::testing
