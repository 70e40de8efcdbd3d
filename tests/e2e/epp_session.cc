#include "tests/e2e/epp_session.h"

#include <unistd.h>

#include <cerrno>

#include "tests/e2e/json_util.h"

namespace abx::e2e {
namespace {

const rapidjson::Value& NullValue() {
  static const rapidjson::Value* null_value = new rapidjson::Value();
  return *null_value;
}

int64_t MillisSince(Clock::time_point start) {
  return std::chrono::duration_cast<Millis>(Clock::now() - start).count();
}

}  // namespace

bool Message::IsResponse() const {
  return valid && json.HasMember("id") && !json.HasMember("method") &&
         (json.HasMember("result") || json.HasMember("error"));
}
bool Message::IsNotification() const {
  return valid && json.HasMember("method") && !json.HasMember("id");
}
bool Message::IsError() const { return IsResponse() && json.HasMember("error"); }

const rapidjson::Value& Message::id() const {
  return valid && json.HasMember("id") ? json["id"] : NullValue();
}
const rapidjson::Value& Message::result() const {
  return valid && json.HasMember("result") ? json["result"] : NullValue();
}
const rapidjson::Value& Message::error() const {
  return valid && json.HasMember("error") ? json["error"] : NullValue();
}
const rapidjson::Value& Message::params() const {
  return valid && json.HasMember("params") ? json["params"] : NullValue();
}
std::string Message::method() const { return valid ? GetString(json, "method") : ""; }
int64_t Message::ErrorCode() const { return valid ? GetInt(json, "error.code", 0) : 0; }
std::string Message::EppCode() const { return valid ? GetString(json, "error.data.epp_code") : ""; }
std::string Message::ErrorMessage() const { return valid ? GetString(json, "error.message") : ""; }

std::unique_ptr<EppSession> EppSession::Start(const std::string& shim_path,
                                              const std::vector<std::string>& env,
                                              const std::string& stderr_path,
                                              std::string* error,
                                              const std::vector<std::string>& wrapper) {
  std::unique_ptr<EppSession> session(new EppSession());
  session->stderr_path_ = stderr_path;
  session->started_ = Clock::now();
  Process::Options options;
  options.argv = wrapper;
  options.argv.push_back(shim_path);
  options.env = env;
  options.pipe_stdin = true;
  options.pipe_stdout = true;
  options.output_file = stderr_path;
  session->process_ = Process::Start(options, error);
  if (!session->process_) return nullptr;
  session->reader_ = std::thread([s = session.get()] { s->ReadLoop(); });
  return session;
}

EppSession::~EppSession() {
  CloseStdin();
  if (!process_->WaitExit(Millis(3000))) process_->Stop(Millis(1000));
  stopping_ = true;
  if (reader_.joinable()) reader_.join();
}

void EppSession::Record(char direction, const std::string& line) {
  // Caller holds mutex_.
  transcript_.push_back(std::string(1, direction) + direction + " +" +
                        std::to_string(MillisSince(started_)) + "ms " + line);
}

bool EppSession::SendRaw(const std::string& bytes) {
  std::lock_guard<std::mutex> write_lock(write_mutex_);
  {
    std::lock_guard<std::mutex> lock(mutex_);
    std::string shown = bytes;
    if (!shown.empty() && shown.back() == '\n') shown.pop_back();
    Record('>', shown);
  }
  int fd = process_->stdin_fd();
  if (fd < 0) return false;
  return WriteAll(fd, bytes.data(), bytes.size());
}

bool EppSession::Send(const std::string& json_line) {
  if (!json_line.empty() && json_line.back() == '\n') return SendRaw(json_line);
  return SendRaw(json_line + "\n");
}

int64_t EppSession::SendRequest(const std::string& method, const std::string& params_json) {
  int64_t id = next_id_++;
  std::string line = "{\"jsonrpc\":\"2.0\",\"id\":" + std::to_string(id) +
                     ",\"method\":" + JsonQuote(method);
  if (!params_json.empty()) line += ",\"params\":" + params_json;
  line += "}";
  Send(line);
  return id;
}

bool EppSession::Notify(const std::string& method, const std::string& params_json) {
  std::string line = "{\"jsonrpc\":\"2.0\",\"method\":" + JsonQuote(method);
  if (!params_json.empty()) line += ",\"params\":" + params_json;
  line += "}";
  return Send(line);
}

MessagePtr EppSession::Request(const std::string& method, const std::string& params_json,
                               Millis timeout) {
  return WaitResponse(SendRequest(method, params_json), timeout);
}

MessagePtr EppSession::Initialize(Millis timeout) {
  return Request("initialize",
                 R"({"protocol":"EPP/1","host":{"name":"abx","version":"1.4.0"}})", timeout);
}

MessagePtr EppSession::WaitResponse(int64_t id, Millis timeout) {
  return WaitResponseForIdJson(std::to_string(id), timeout);
}

MessagePtr EppSession::WaitResponseForIdJson(const std::string& id_json, Millis timeout) {
  std::unique_lock<std::mutex> lock(mutex_);
  changed_.wait_for(lock, timeout, [&] {
    auto it = responses_.find(id_json);
    return (it != responses_.end() && !it->second.empty()) || stdout_eof_;
  });
  auto it = responses_.find(id_json);
  if (it == responses_.end() || it->second.empty()) return nullptr;
  return it->second.front();
}

std::vector<MessagePtr> EppSession::ResponsesFor(int64_t id) const {
  return ResponsesForIdJson(std::to_string(id));
}

std::vector<MessagePtr> EppSession::ResponsesForIdJson(const std::string& id_json) const {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = responses_.find(id_json);
  return it == responses_.end() ? std::vector<MessagePtr>{} : it->second;
}

std::vector<MessagePtr> EppSession::Notifications(const std::string& exec_id) const {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = by_exec_id_.find(exec_id);
  return it == by_exec_id_.end() ? std::vector<MessagePtr>{} : it->second;
}

std::vector<MessagePtr> EppSession::NotificationsByMethod(const std::string& method) const {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = by_method_.find(method);
  return it == by_method_.end() ? std::vector<MessagePtr>{} : it->second;
}

MessagePtr EppSession::WaitNotification(const std::string& exec_id, const std::string& method,
                                        Millis timeout) {
  std::unique_lock<std::mutex> lock(mutex_);
  MessagePtr found;
  auto look = [&] {
    auto it = by_exec_id_.find(exec_id);
    if (it == by_exec_id_.end()) return false;
    for (const MessagePtr& m : it->second) {
      if (m->method() == method) {
        found = m;
        return true;
      }
    }
    return false;
  };
  changed_.wait_for(lock, timeout, [&] { return look() || stdout_eof_; });
  if (!found) look();
  return found;
}

MessagePtr EppSession::WaitExecExit(const std::string& exec_id, Millis timeout) {
  return WaitNotification(exec_id, "exec.exit", timeout);
}

std::vector<MessagePtr> EppSession::AllMessages() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return all_;
}

std::vector<std::string> EppSession::ProtocolViolations() const {
  std::vector<std::string> out;
  for (const MessagePtr& m : AllMessages()) {
    std::string why;
    if (!m->valid) {
      why = m->parse_error.empty() ? "not a JSON object" : m->parse_error;
    } else if (GetString(m->json, "jsonrpc") != "2.0") {
      why = "no \"jsonrpc\":\"2.0\"";
    } else if (!m->IsResponse() && !m->IsNotification()) {
      why = "neither a response (id + result/error) nor a notification (method, no id)";
    } else if (m->IsResponse() && m->json.HasMember("result") && m->json.HasMember("error")) {
      why = "both result and error";
    }
    if (!why.empty()) out.push_back("line " + std::to_string(m->index) + ": " + why + ": " +
                                    Abbreviate(m->raw, 300));
  }
  return out;
}

void EppSession::ReadLoop() {
  std::string pending;
  char buffer[65536];
  int fd = process_->stdout_fd();
  while (!stopping_) {
    if (reading_paused_) {
      std::this_thread::sleep_for(Millis(20));
      continue;
    }
    if (!WaitReadable(fd, Millis(100))) continue;
    ssize_t n = ::read(fd, buffer, sizeof buffer);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    pending.append(buffer, static_cast<size_t>(n));
    size_t start = 0;
    for (size_t newline; (newline = pending.find('\n', start)) != std::string::npos;
         start = newline + 1) {
      File(pending.substr(start, newline - start));
    }
    pending.erase(0, start);
  }
  if (!pending.empty()) File(pending);  // a last line without "\n" is still shown
  std::lock_guard<std::mutex> lock(mutex_);
  stdout_eof_ = true;
  changed_.notify_all();
}

void EppSession::File(std::string line) {
  auto message = std::make_shared<Message>();
  message->raw = std::move(line);
  message->received = Clock::now();
  message->valid = ParseJson(message->raw, &message->json, &message->parse_error) &&
                   message->json.IsObject();
  if (message->parse_error.empty() && !message->valid) message->parse_error = "not an object";

  std::lock_guard<std::mutex> lock(mutex_);
  message->index = all_.size();
  Record('<', message->raw);
  all_.push_back(message);
  if (message->IsResponse()) {
    responses_[ToJson(message->json["id"])].push_back(message);
  } else if (message->IsNotification()) {
    by_method_[message->method()].push_back(message);
    std::string exec_id = GetString(message->json, "params.exec_id");
    if (!exec_id.empty()) by_exec_id_[exec_id].push_back(message);
  }
  changed_.notify_all();
}

bool EppSession::WaitStdoutEof(Millis timeout) {
  std::unique_lock<std::mutex> lock(mutex_);
  return changed_.wait_for(lock, timeout, [&] { return stdout_eof_; });
}

void EppSession::CloseStdin() {
  std::lock_guard<std::mutex> write_lock(write_mutex_);
  process_->CloseStdin();
}

std::optional<ExitStatus> EppSession::WaitExit(Millis timeout) {
  return process_->WaitExit(timeout);
}

std::string EppSession::StderrText() const { return ReadFile(stderr_path_); }

std::string EppSession::Transcript(size_t max_line) const {
  std::lock_guard<std::mutex> lock(mutex_);
  std::string out;
  for (const std::string& line : transcript_) out += Abbreviate(line, max_line) + "\n";
  return out;
}

}  // namespace abx::e2e
