#include "tests/bridge/api/epp/in_process_host.h"

#include <set>
#include <thread>

#include "bridge/daemon/request_pool.h"
#include "tests/e2e/json_util.h"

namespace abx::epp::testing {

using e2e::Abbreviate;
using e2e::GetInt;
using e2e::GetString;
using e2e::JsonQuote;
using e2e::ParseJson;
using e2e::ToJson;

bool RecordingSink::Write(std::string line, std::string response_id) {
  auto message = std::make_shared<Message>();
  message->raw = std::move(line);
  message->received = Clock::now();
  message->valid = ParseJson(message->raw, &message->json, &message->parse_error) &&
                   message->json.IsObject();
  if (message->valid && message->method() == "exec.output") {
    std::shared_ptr<const std::function<void()>> hook;
    {
      std::lock_guard<std::mutex> lock(mu_);
      hook = before_output_;
    }
    if (hook) (*hook)();
  }

  std::lock_guard<std::mutex> lock(mu_);
  if (disconnected_) {
    ++late_writes_;
    return false;
  }
  auto problem = [&](const std::string& what) {
    problems_.push_back(what + ": " + Abbreviate(message->raw, 300));
  };
  message->index = all_.size();
  all_.push_back(message);
  if (!message->valid) {
    problem("not a JSON object (" + message->parse_error + ")");
  } else if (GetString(message->json, "jsonrpc") != "2.0") {
    problem("no \"jsonrpc\":\"2.0\"");
  } else if (message->IsResponse()) {
    const std::string id_json = ToJson(message->json["id"]);
    if (response_id != id_json) {
      problem("response tagged " + JsonQuote(response_id) + " instead of its id " + id_json);
    }
    responses_[id_json].push_back(message);
  } else if (message->IsNotification()) {
    if (!response_id.empty()) problem("notification tagged as the response " + response_id);
    by_method_[message->method()].push_back(message);
    const std::string exec_id = GetString(message->json, "params.exec_id");
    if (!exec_id.empty()) by_exec_id_[exec_id].push_back(message);
  } else {
    problem("neither a response nor a notification");
  }
  changed_.notify_all();
  return true;
}

void RecordingSink::set_before_output(std::function<void()> hook) {
  std::lock_guard<std::mutex> lock(mu_);
  before_output_ = std::make_shared<const std::function<void()>>(std::move(hook));
}

void RecordingSink::Disconnect() {
  std::lock_guard<std::mutex> lock(mu_);
  disconnected_ = true;
}

MessagePtr RecordingSink::WaitResponse(const std::string& id_json, Millis timeout) {
  std::unique_lock<std::mutex> lock(mu_);
  MessagePtr found;
  changed_.wait_for(lock, timeout, [&] {
    auto it = responses_.find(id_json);
    if (it == responses_.end()) return false;
    found = it->second.front();
    return true;
  });
  return found;
}

std::vector<MessagePtr> RecordingSink::ResponsesFor(const std::string& id_json) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = responses_.find(id_json);
  return it == responses_.end() ? std::vector<MessagePtr>() : it->second;
}

std::vector<MessagePtr> RecordingSink::Notifications(const std::string& exec_id) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = by_exec_id_.find(exec_id);
  return it == by_exec_id_.end() ? std::vector<MessagePtr>() : it->second;
}

std::vector<MessagePtr> RecordingSink::NotificationsByMethod(const std::string& method) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = by_method_.find(method);
  return it == by_method_.end() ? std::vector<MessagePtr>() : it->second;
}

MessagePtr RecordingSink::WaitNotification(const std::string& exec_id, const std::string& method,
                                           Millis timeout) {
  std::unique_lock<std::mutex> lock(mu_);
  MessagePtr found;
  changed_.wait_for(lock, timeout, [&] {
    auto it = by_exec_id_.find(exec_id);
    if (it == by_exec_id_.end()) return false;
    for (const MessagePtr& m : it->second) {
      if (m->method() == method) {
        found = m;
        return true;
      }
    }
    return false;
  });
  return found;
}

std::vector<MessagePtr> RecordingSink::All() const {
  std::lock_guard<std::mutex> lock(mu_);
  return all_;
}

size_t RecordingSink::late_writes() const {
  std::lock_guard<std::mutex> lock(mu_);
  return late_writes_;
}

std::vector<std::string> RecordingSink::Problems() const {
  std::lock_guard<std::mutex> lock(mu_);
  return problems_;
}

ExecTrace TraceExec(const RecordingSink& sink, const std::string& exec_id,
                    const MessagePtr& response, Millis timeout, Millis settle) {
  ExecTrace trace;
  const auto deadline = Clock::now() + timeout;
  auto has_exit = [&] {
    for (const MessagePtr& m : sink.Notifications(exec_id)) {
      if (m->method() == "exec.exit") return true;
    }
    return false;
  };
  while (!has_exit() && Clock::now() < deadline) std::this_thread::sleep_for(Millis(20));
  std::this_thread::sleep_for(settle);

  int64_t next_seq = 0;
  size_t exits = 0;
  for (const MessagePtr& m : sink.Notifications(exec_id)) {
    const std::string where = " (line " + std::to_string(m->index) + ")";
    if (response && m->index < response->index) {
      trace.problems.push_back(m->method() + " before the exec.start answer" + where);
    }
    if (exits > 0) trace.problems.push_back(m->method() + " after exec.exit" + where);
    if (m->method() == "exec.output") {
      ++trace.output_count;
      const int64_t seq = GetInt(m->json, "params.seq", -1);
      if (seq != next_seq) {
        trace.problems.push_back("seq " + std::to_string(seq) + " where " +
                                 std::to_string(next_seq) + " was due" + where);
      }
      next_seq = seq + 1;
      const std::string stream = GetString(m->json, "params.stream");
      const std::string data = GetString(m->json, "params.data");
      if (stream == "stdout") {
        trace.stdout_data += data;
      } else if (stream == "stderr") {
        trace.stderr_data += data;
      } else {
        trace.problems.push_back("stream " + JsonQuote(stream) + where);
      }
    } else if (m->method() == "exec.exit") {
      if (exits++ == 0) trace.exit = m;
    } else {
      trace.problems.push_back("unexpected " + m->method() + where);
    }
  }
  if (exits == 0) trace.problems.push_back("no exec.exit for " + exec_id);
  if (exits > 1) trace.problems.push_back(std::to_string(exits) + " exec.exit for " + exec_id);
  return trace;
}

namespace {

// One request pool for every in-process session, as the bridge has one for all of its
// sessions (bridge/api/grpc/serving_state.h); never destroyed, like the fixture's core.
daemon::RequestPool* SharedRequestPool() {
  static daemon::RequestPool* const pool = new daemon::RequestPool();
  return pool;
}

}  // namespace

InProcessHost::InProcessHost(core::BridgeCore* core, std::map<std::string, std::string> config) {
  SessionOrigin origin;
  origin.config = std::move(config);
  origin.shim_version = "in-process";
  session_ = std::make_unique<Session>(core, SharedRequestPool(), std::move(origin), &sink_);
}

InProcessHost::~InProcessHost() { DestroySession(); }

std::string InProcessHost::Send(const std::string& method, const std::string& params_json) {
  const std::string id_json = std::to_string(next_id_++);
  {
    std::lock_guard<std::mutex> lock(mu_);
    sent_ids_.push_back(id_json);
  }
  session_->OnLine("{\"jsonrpc\":\"2.0\",\"id\":" + id_json + ",\"method\":" + JsonQuote(method) +
                   ",\"params\":" + params_json + "}");
  return id_json;
}

void InProcessHost::Notify(const std::string& method, const std::string& params_json) {
  session_->OnLine("{\"jsonrpc\":\"2.0\",\"method\":" + JsonQuote(method) +
                   ",\"params\":" + params_json + "}");
}

MessagePtr InProcessHost::Call(const std::string& method, const std::string& params_json,
                               Millis timeout) {
  return sink_.WaitResponse(Send(method, params_json), timeout);
}

MessagePtr InProcessHost::Initialize() {
  return Call("initialize",
              R"({"protocol":"EPP/1","host":{"name":"abx","version":"1.4.0"},"capabilities":{}})",
              Millis(5000));
}

void InProcessHost::CancelRequest(const std::string& id_json) {
  Notify("$/cancel", "{\"id\":" + id_json + "}");
}

void InProcessHost::EndOfInput() { session_->OnEndOfInput(); }

Millis InProcessHost::DestroySession() {
  const auto start = Clock::now();
  session_.reset();
  return std::chrono::duration_cast<Millis>(Clock::now() - start);
}

std::vector<std::string> InProcessHost::AnswerProblems() const {
  std::vector<std::string> problems;
  std::set<std::string> sent;
  {
    std::lock_guard<std::mutex> lock(mu_);
    sent.insert(sent_ids_.begin(), sent_ids_.end());
  }
  for (const std::string& id : sent) {
    const size_t answers = sink_.ResponsesFor(id).size();
    if (answers != 1) {
      problems.push_back("request " + id + " answered " + std::to_string(answers) + " times");
    }
  }
  for (const MessagePtr& m : sink_.All()) {
    if (m->IsResponse() && !sent.count(ToJson(m->json["id"]))) {
      problems.push_back("answer to a request never sent: " + Abbreviate(m->raw, 200));
    }
  }
  return problems;
}

std::string Join(const std::vector<std::string>& problems) {
  std::string out;
  for (const std::string& p : problems) out += "\n  " + p;
  return out;
}

}  // namespace abx::epp::testing
