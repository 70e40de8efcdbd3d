#include "bench/shim_session.h"

#include <cstring>

namespace abx::bench {

bool ShimSession::Start(const ShimConfig& config, std::string* error) {
  SpawnOptions options;
  options.argv = {config.shim_binary};
  options.env = config.env;
  options.pipe_stdin = true;
  options.pipe_stdout = true;
  options.stderr_path = config.stderr_path;
  if (!child_.Spawn(options, error)) return false;
  reader_ = std::make_unique<LineReader>(child_.stdout_fd());
  return true;
}

bool ShimSession::SendLine(const std::string& line) {
  return WriteAll(child_.stdin_fd(), line.data(), line.size());
}

int64_t ShimSession::Send(const std::string& method, const std::string& params_json) {
  const int64_t id = next_id_++;
  std::string line = "{\"jsonrpc\":\"2.0\",\"id\":" + std::to_string(id) + ",\"method\":\"" + method + "\"";
  if (!params_json.empty()) line += ",\"params\":" + params_json;
  line += "}\n";
  SendLine(line);
  return id;
}

void ShimSession::Notify(const std::string& method, const std::string& params_json) {
  std::string line = "{\"jsonrpc\":\"2.0\",\"method\":\"" + method + "\"";
  if (!params_json.empty()) line += ",\"params\":" + params_json;
  line += "}\n";
  SendLine(line);
}

Answer ShimSession::Await(int64_t id, int timeout_ms, const NotificationFn& on_notification) {
  Answer answer;
  for (;;) {
    char* line = nullptr;
    size_t size = 0;
    bool timed_out = false;
    if (!reader_->Next(&line, &size, timeout_ms, &timed_out)) {
      answer.error = timed_out ? "no answer within " + std::to_string(timeout_ms) + " ms"
                               : "the shim closed its stdout";
      return answer;
    }
    // Notifications carry no "id"; look before parsing, so a callback may parse in situ.
    const bool has_id = std::strstr(line, "\"id\":") != nullptr &&
                        std::strstr(line, "\"method\":\"exec.") == nullptr &&
                        std::strstr(line, "\"method\":\"$/") == nullptr;
    if (!has_id) {
      if (on_notification) on_notification(line, size);
      continue;
    }
    auto doc = std::make_unique<rapidjson::Document>();
    doc->Parse(line, size);
    if (doc->HasParseError() || !doc->IsObject()) {
      answer.error = "unparsable line from the shim";
      return answer;
    }
    auto idv = doc->FindMember("id");
    if (idv == doc->MemberEnd() || !idv->value.IsInt64() || idv->value.GetInt64() != id) {
      continue;  // an answer to another request (none is pending in this benchmark)
    }
    auto err = doc->FindMember("error");
    if (err != doc->MemberEnd() && err->value.IsObject()) {
      const auto& e = err->value;
      auto code = e.FindMember("code");
      auto message = e.FindMember("message");
      answer.error = std::to_string(code != e.MemberEnd() && code->value.IsInt() ? code->value.GetInt() : 0) +
                     ": " + (message != e.MemberEnd() && message->value.IsString() ? message->value.GetString() : "");
      answer.doc = std::move(doc);
      return answer;
    }
    auto result = doc->FindMember("result");
    if (result == doc->MemberEnd()) {
      answer.error = "an answer with neither result nor error";
      return answer;
    }
    answer.ok = true;
    answer.result = &result->value;
    answer.doc = std::move(doc);
    return answer;
  }
}

bool ShimSession::ReadRawLine(std::string* line, int timeout_ms) {
  char* data = nullptr;
  size_t size = 0;
  if (!reader_->Next(&data, &size, timeout_ms, nullptr)) return false;
  line->assign(data, size);
  return true;
}

Answer ShimSession::ParseAnswer(std::string line, int64_t id) {
  Answer answer;
  auto doc = std::make_unique<rapidjson::Document>();
  doc->Parse(line.data(), line.size());
  if (doc->HasParseError() || !doc->IsObject()) {
    answer.error = "unparsable line from the shim";
    return answer;
  }
  auto idv = doc->FindMember("id");
  if (idv == doc->MemberEnd() || !idv->value.IsInt64() || idv->value.GetInt64() != id) {
    answer.error = "not the answer to request " + std::to_string(id);
    return answer;
  }
  auto result = doc->FindMember("result");
  if (result == doc->MemberEnd()) {
    auto err = doc->FindMember("error");
    answer.error = err != doc->MemberEnd() && err->value.IsObject() && err->value.HasMember("message") &&
                           err->value["message"].IsString()
                       ? err->value["message"].GetString()
                       : "an answer with neither result nor error";
    return answer;
  }
  answer.ok = true;
  answer.result = &result->value;
  answer.doc = std::move(doc);
  return answer;
}

Answer ShimSession::Initialize(int timeout_ms) {
  return Await(Send("initialize", "{\"protocol\":\"EPP/1\",\"host\":{\"name\":\"abx-bench\",\"version\":\"1\"}}"),
               timeout_ms);
}

int ShimSession::Close(int timeout_ms) {
  if (child_.pid() <= 0) return -1;
  Await(Send("shutdown", ""), timeout_ms);
  Notify("exit", "");
  child_.CloseStdin();
  const int code = child_.Wait(timeout_ms);
  if (code == -1) child_.Stop(0);
  return code;
}

const rapidjson::Value* NotificationParams(rapidjson::Document& doc, const char** method) {
  if (!doc.IsObject()) return nullptr;
  auto m = doc.FindMember("method");
  auto p = doc.FindMember("params");
  if (m == doc.MemberEnd() || !m->value.IsString() || p == doc.MemberEnd()) return nullptr;
  *method = m->value.GetString();
  return &p->value;
}

}  // namespace abx::bench
