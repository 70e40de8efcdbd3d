#pragma once
// The host's side of one EPP/1 session: a shim process on two pipes, JSON-RPC lines out,
// answers and notifications in. What abx does, reduced to what the benchmark needs.

#include <sys/types.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <rapidjson/document.h>

#include "bench/child.h"
#include "bench/line_reader.h"

namespace abx::bench {

struct ShimConfig {
  std::string shim_binary;
  std::vector<std::string> env;  // the shim's whole environment
  std::string stderr_path;       // where the shim's stderr goes
};

// One answer: `result` (a member of `doc`) when ok, else `error` is "code: message".
struct Answer {
  bool ok = false;
  std::string error;
  std::unique_ptr<rapidjson::Document> doc;
  const rapidjson::Value* result = nullptr;
};

// The "id" of an answer's result (a created sandbox's), "" when there is none.
inline std::string IdOf(const Answer& a) {
  return a.ok && a.result && a.result->IsObject() && a.result->HasMember("id") ? (*a.result)["id"].GetString() : "";
}

class ShimSession {
 public:
  // Starts the shim process; nothing is sent yet.
  bool Start(const ShimConfig& config, std::string* error);

  // Sends one request line; returns its id.
  int64_t Send(const std::string& method, const std::string& params_json);
  void Notify(const std::string& method, const std::string& params_json);
  // Sends a line exactly as given (it must end in '\n').
  bool SendLine(const std::string& line);
  // Reserves `n` consecutive request ids for lines made by the caller; the first one.
  int64_t TakeIds(int64_t n) {
    const int64_t first = next_id_;
    next_id_ += n;
    return first;
  }

  // Reads until the answer to `id`; notifications before it go to `on_notification`
  // (may be empty) as raw, in-situ-parsable lines.
  using NotificationFn = std::function<void(char* line, size_t size)>;
  Answer Await(int64_t id, int timeout_ms, const NotificationFn& on_notification = {});

  // The next line the shim writes, copied into `line` as it is, unparsed; false on a
  // timeout or end of output. For timing what the provider does up to the host's pipe,
  // with the host's own parsing left for later (ParseAnswer).
  bool ReadRawLine(std::string* line, int timeout_ms);
  // Parses a line read raw as the answer to `id`.
  static Answer ParseAnswer(std::string line, int64_t id);

  Answer Call(const std::string& method, const std::string& params_json, int timeout_ms = 60000) {
    return Await(Send(method, params_json), timeout_ms);
  }

  // initialize with the EPP/1 handshake.
  Answer Initialize(int timeout_ms = 30000);

  // shutdown, exit, and wait for the process; its exit code (-1 if it had to be killed).
  int Close(int timeout_ms = 5000);

  pid_t pid() const { return child_.pid(); }
  LineReader& reader() { return *reader_; }
  Child& child() { return child_; }

 private:
  Child child_;
  std::unique_ptr<LineReader> reader_;
  int64_t next_id_ = 1;
};

// The params of a `{"jsonrpc":"2.0","method":...}` line, or nullptr.
const rapidjson::Value* NotificationParams(rapidjson::Document& doc, const char** method);

}  // namespace abx::bench
