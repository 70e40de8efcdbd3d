#include "tests/soak/soak_client.h"

#include <unistd.h>

#include <cerrno>

#include "tests/e2e/json_util.h"

namespace abx::soak {

using e2e::GetInt;
using e2e::GetString;

std::unique_ptr<SoakClient> SoakClient::Start(const std::string& shim_path,
                                              const std::vector<std::string>& env,
                                              const std::string& stderr_path,
                                              std::string* error) {
  e2e::IgnoreSigpipe();
  std::unique_ptr<SoakClient> client(new SoakClient());
  e2e::Process::Options options;
  options.argv = {shim_path};
  options.env = env;
  options.pipe_stdin = true;
  options.pipe_stdout = true;
  options.output_file = stderr_path;
  client->process_ = e2e::Process::Start(options, error);
  if (!client->process_) return nullptr;
  client->answers_.push_back(0);
  client->reader_ = std::thread([c = client.get()] { c->ReadLoop(); });
  return client;
}

SoakClient::~SoakClient() {
  Finish(Millis(5000));
  if (reader_.joinable()) reader_.join();
}

std::string SoakClient::Finish(Millis timeout) {
  {
    std::lock_guard<std::mutex> lock(write_mutex_);
    process_->CloseStdin();
  }
  auto status = process_->WaitExit(timeout);
  if (!status) {
    process_->Stop(Millis(1000));
    return "";
  }
  // The reader ends at EOF, which follows the exit.
  std::unique_lock<std::mutex> lock(mutex_);
  changed_.wait_for(lock, Millis(2000), [&] { return eof_; });
  return status->ToString();
}

int64_t SoakClient::Send(const std::string& method, const std::string& params_json) {
  std::lock_guard<std::mutex> write_lock(write_mutex_);
  int64_t id;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    id = next_id_++;
    answers_.push_back(0);
  }
  const std::string line = "{\"jsonrpc\":\"2.0\",\"id\":" + std::to_string(id) +
                           ",\"method\":" + e2e::JsonQuote(method) + ",\"params\":" +
                           params_json + "}\n";
  const int fd = process_->stdin_fd();
  if (fd < 0 || !e2e::WriteAll(fd, line.data(), line.size())) {
    std::lock_guard<std::mutex> lock(mutex_);
    problems_.push_back("request " + std::to_string(id) + " (" + method +
                        ") could not be written to the shim");
  }
  return id;
}

std::shared_ptr<const rapidjson::Document> SoakClient::Wait(int64_t id,
                                                            Clock::time_point deadline) {
  std::unique_lock<std::mutex> lock(mutex_);
  changed_.wait_until(lock, deadline, [&] { return unclaimed_.count(id) > 0 || eof_; });
  auto it = unclaimed_.find(id);
  if (it == unclaimed_.end()) return nullptr;
  auto doc = it->second;
  unclaimed_.erase(it);
  return doc;
}

std::shared_ptr<const rapidjson::Document> SoakClient::Call(const std::string& method,
                                                            const std::string& params_json,
                                                            Millis timeout) {
  return Wait(Send(method, params_json), Clock::now() + timeout);
}

StreamResult SoakClient::Stream(const std::string& params_json, Millis timeout,
                                std::shared_ptr<const rapidjson::Document>* start_response) {
  StreamResult out;
  const auto deadline = Clock::now() + timeout;
  auto response = Wait(Send("exec.start", params_json), deadline);
  if (start_response) *start_response = response;
  if (!response || !response->HasMember("result")) {
    out.problems.push_back("exec.start: " +
                           (response ? e2e::ToJson(*response) : std::string("no answer")));
    return out;
  }
  const std::string exec_id = GetString(*response, "result.exec_id");
  if (exec_id.empty()) {
    out.problems.push_back("exec.start answered no exec_id: " + e2e::ToJson(*response));
    return out;
  }
  int64_t next_seq = 0;
  size_t consumed = 0;
  std::unique_lock<std::mutex> lock(mutex_);
  auto available = [&] {
    auto it = notifications_.find(exec_id);
    return it != notifications_.end() && it->second.size() > consumed;
  };
  while (!out.exited) {
    if (!available()) {
      if (eof_ || !changed_.wait_until(lock, deadline, [&] { return available() || eof_; })) break;
      if (!available()) break;  // end of stdout
    }
    Notification n = std::move(notifications_[exec_id][consumed++]);
    if (n.method == "exec.output") {
      if (n.seq != next_seq) {
        out.problems.push_back(exec_id + ": exec.output seq " + std::to_string(n.seq) +
                               " where " + std::to_string(next_seq) + " was due");
      }
      next_seq = n.seq + 1;
      ++out.outputs;
      if (n.stream == "stdout") {
        out.stdout_data += n.data;
      } else if (n.stream == "stderr") {
        out.stderr_data += n.data;
      } else {
        out.problems.push_back(exec_id + ": exec.output on stream \"" + n.stream + "\"");
      }
    } else if (n.method == "exec.exit") {
      out.exited = true;
      out.exit_code = n.exit_code;
    } else {
      out.problems.push_back(exec_id + ": unexpected notification " + n.method);
    }
  }
  if (!out.exited) {
    out.problems.push_back(exec_id + ": no exec.exit within " +
                           std::to_string(timeout.count()) + " ms");
  }
  // Anything filed after the exit is left in place and reported by AccountingProblems.
  if (auto it = notifications_.find(exec_id); it != notifications_.end()) {
    auto& list = it->second;
    list.erase(list.begin(), list.begin() + static_cast<std::ptrdiff_t>(consumed));
    if (list.empty()) notifications_.erase(it);
  }
  return out;
}

void SoakClient::ReadLoop() {
  std::string pending;
  std::vector<char> buffer(1 << 16);
  const int fd = process_->stdout_fd();
  for (;;) {
    if (!e2e::WaitReadable(fd, Millis(200))) {
      if (process_->exit_status()) {
        // Drain whatever a dead shim left, then stop.
        if (!e2e::WaitReadable(fd, Millis(0))) break;
      }
      continue;
    }
    const ssize_t n = ::read(fd, buffer.data(), buffer.size());
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stdout_bytes_ += n;
    }
    pending.append(buffer.data(), static_cast<size_t>(n));
    size_t start = 0;
    for (size_t newline; (newline = pending.find('\n', start)) != std::string::npos;
         start = newline + 1) {
      File(pending.substr(start, newline - start));
    }
    pending.erase(0, start);
  }
  std::lock_guard<std::mutex> lock(mutex_);
  if (!pending.empty()) {
    problems_.push_back("stdout ended inside a line: " + e2e::Abbreviate(pending, 200));
  }
  eof_ = true;
  changed_.notify_all();
}

void SoakClient::File(const std::string& line) {
  auto doc = std::make_shared<rapidjson::Document>();
  std::string parse_error;
  const bool parsed = e2e::ParseJson(line, doc.get(), &parse_error) && doc->IsObject();
  std::lock_guard<std::mutex> lock(mutex_);
  if (!parsed || GetString(*doc, "jsonrpc") != "2.0") {
    problems_.push_back("not a JSON-RPC 2.0 object on stdout (" + parse_error +
                        "): " + e2e::Abbreviate(line, 300));
    return;
  }
  if (doc->HasMember("id") && !doc->HasMember("method")) {
    const auto& id = (*doc)["id"];
    const bool has_result = doc->HasMember("result"), has_error = doc->HasMember("error");
    if (!id.IsInt64() || has_result == has_error) {
      problems_.push_back("malformed response: " + e2e::Abbreviate(line, 300));
      return;
    }
    const int64_t n = id.GetInt64();
    if (n <= 0 || n >= static_cast<int64_t>(answers_.size())) {
      problems_.push_back("a response for id " + std::to_string(n) +
                          ", which was never sent: " + e2e::Abbreviate(line, 300));
      return;
    }
    ++responses_;
    if (++answers_[static_cast<size_t>(n)] > 1) {
      problems_.push_back("a second response for id " + std::to_string(n) + ": " +
                          e2e::Abbreviate(line, 300));
      return;
    }
    unclaimed_[n] = std::move(doc);
    changed_.notify_all();
    return;
  }
  if (!doc->HasMember("method") || doc->HasMember("id")) {
    problems_.push_back("neither a response nor a notification: " + e2e::Abbreviate(line, 300));
    return;
  }
  Notification n;
  n.method = GetString(*doc, "method");
  const std::string exec_id = GetString(*doc, "params.exec_id");
  if (n.method == "$/progress") return;  // create's progress: nothing to account for
  if (exec_id.empty()) {
    problems_.push_back("a notification without exec_id: " + e2e::Abbreviate(line, 300));
    return;
  }
  if (n.method == "exec.output") {
    n.stream = GetString(*doc, "params.stream");
    n.data = GetString(*doc, "params.data");
    n.seq = GetInt(*doc, "params.seq", -1);
  } else if (n.method == "exec.exit") {
    const rapidjson::Value* code = e2e::Find(*doc, "params.exit_code");
    if (code && code->IsInt64()) n.exit_code = code->GetInt64();
    n.raw = e2e::Abbreviate(line, 300);
  }
  notifications_[exec_id].push_back(std::move(n));
  changed_.notify_all();
}

int64_t SoakClient::requests_sent() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return next_id_ - 1;
}

int64_t SoakClient::responses_received() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return responses_;
}

int64_t SoakClient::stdout_bytes() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return stdout_bytes_;
}

std::vector<std::string> SoakClient::AccountingProblems() const {
  std::lock_guard<std::mutex> lock(mutex_);
  std::vector<std::string> out = problems_;
  for (size_t id = 1; id < answers_.size(); ++id) {
    if (answers_[id] == 0) out.push_back("request " + std::to_string(id) + " was never answered");
  }
  for (const auto& [exec_id, list] : notifications_) {
    for (const Notification& n : list) {
      out.push_back(n.method + " for " + exec_id +
                    " that no exec.start was waiting for (after its exit, or unknown)");
    }
  }
  return out;
}

}  // namespace abx::soak
