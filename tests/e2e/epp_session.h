#pragma once

// One abx-opensandbox-shim process driven over stdin/stdout as a host drives it (EPP/1:
// one JSON-RPC object per line). A reader thread files every stdout line as a response
// (by id) or a notification (by method and exec_id); tests wait for what they expect,
// with a timeout, then look at everything that came, in arrival order.

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "rapidjson/document.h"
#include "tests/e2e/process.h"

namespace abx::e2e {

// How long a test waits for an answer that should come at once from a local fake.
inline constexpr Millis kDefaultTimeout{10000};

// One line the shim wrote to stdout.
struct Message {
  std::string raw;           // the line, without its "\n"
  rapidjson::Document json;  // parsed; see `valid`
  bool valid = false;        // parsed as a JSON object
  std::string parse_error;   // why not, when !valid
  size_t index = 0;          // arrival order within the session, from 0
  Clock::time_point received;

  bool IsResponse() const;      // has "id" and "result" or "error", no "method"
  bool IsNotification() const;  // has "method", no "id"
  bool IsError() const;         // a response with "error"
  // JSON null when absent.
  const rapidjson::Value& id() const;
  const rapidjson::Value& result() const;
  const rapidjson::Value& error() const;
  const rapidjson::Value& params() const;
  std::string method() const;
  int64_t ErrorCode() const;      // error.code, 0 when not an error
  std::string EppCode() const;    // error.data.epp_code, "" when absent
  std::string ErrorMessage() const;
};
using MessagePtr = std::shared_ptr<const Message>;

class EppSession {
 public:
  // Starts the shim at `shim_path` with exactly `env` as its environment, stdin and
  // stdout piped, stderr into `stderr_path`. `wrapper` (absolute argv[0]) runs the shim
  // as its last argument: `unshare …`, `setpriv …`, `prlimit …`.
  static std::unique_ptr<EppSession> Start(const std::string& shim_path,
                                           const std::vector<std::string>& env,
                                           const std::string& stderr_path, std::string* error,
                                           const std::vector<std::string>& wrapper = {});
  // Closes stdin, gives the shim 3 s to exit, then kills it.
  ~EppSession();
  EppSession(const EppSession&) = delete;
  EppSession& operator=(const EppSession&) = delete;

  // Writes one line ("\n" appended when missing). False when the pipe is closed.
  bool Send(const std::string& json_line);
  // Writes bytes as they are (partial lines, oversized lines, garbage).
  bool SendRaw(const std::string& bytes);

  // Sends {"jsonrpc":"2.0","id":N,"method":...,"params":...} with the next id (1, 2, ...)
  // and returns N. `params_json` "" omits params. Ids given to Send() by hand do not
  // move the counter: use ids >= 1000000 there.
  int64_t SendRequest(const std::string& method, const std::string& params_json = "{}");
  // Sends a notification (no id).
  bool Notify(const std::string& method, const std::string& params_json = "{}");
  // SendRequest + WaitResponse. Null on timeout (the failure is the caller's to report).
  MessagePtr Request(const std::string& method, const std::string& params_json = "{}",
                     Millis timeout = kDefaultTimeout);
  // `initialize` with protocol EPP/1 and host abx 1.4.0.
  MessagePtr Initialize(Millis timeout = kDefaultTimeout);

  // First response whose id is `id`; null after `timeout`.
  MessagePtr WaitResponse(int64_t id, Millis timeout = kDefaultTimeout);
  // Same with the id as JSON text: "7", "\"abc\"", "null".
  MessagePtr WaitResponseForIdJson(const std::string& id_json, Millis timeout = kDefaultTimeout);
  // Every response received so far for an id (so a test can check "exactly once").
  std::vector<MessagePtr> ResponsesFor(int64_t id) const;
  std::vector<MessagePtr> ResponsesForIdJson(const std::string& id_json) const;

  // Notifications whose params.exec_id is `exec_id`, in arrival order.
  std::vector<MessagePtr> Notifications(const std::string& exec_id) const;
  // Notifications with this method, in arrival order.
  std::vector<MessagePtr> NotificationsByMethod(const std::string& method) const;
  // First notification with `method` for `exec_id`; null after `timeout`.
  MessagePtr WaitNotification(const std::string& exec_id, const std::string& method,
                              Millis timeout = kDefaultTimeout);
  // WaitNotification(exec_id, "exec.exit", timeout).
  MessagePtr WaitExecExit(const std::string& exec_id, Millis timeout = kDefaultTimeout);

  // Every stdout line so far, in arrival order (parsed or not).
  std::vector<MessagePtr> AllMessages() const;
  // Lines that are not a JSON-RPC 2.0 object ("jsonrpc":"2.0"), for the stdout-discipline
  // check; each with the reason.
  std::vector<std::string> ProtocolViolations() const;

  // Waits for EOF on the shim's stdout (every writer gone, daemon children included).
  bool WaitStdoutEof(Millis timeout);
  // While paused, the shim's stdout is not read: a host that stops reading.
  void PauseReading(bool paused) { reading_paused_ = paused; }
  void CloseStdin();
  std::optional<ExitStatus> WaitExit(Millis timeout);
  pid_t pid() const { return process_->pid(); }
  const std::string& stderr_path() const { return stderr_path_; }
  std::string StderrText() const;
  // ">> sent line" / "<< received line" with milliseconds since start, each line cut
  // at `max_line` bytes.
  std::string Transcript(size_t max_line = 600) const;

 private:
  EppSession() = default;
  void ReadLoop();
  void File(std::string line);
  void Record(char direction, const std::string& line);

  std::unique_ptr<Process> process_;
  std::string stderr_path_;
  Clock::time_point started_;
  std::atomic<bool> reading_paused_{false};
  std::atomic<bool> stopping_{false};
  std::thread reader_;
  std::atomic<int64_t> next_id_{1};

  mutable std::mutex mutex_;
  std::condition_variable changed_;
  std::mutex write_mutex_;
  bool stdout_eof_ = false;
  std::vector<MessagePtr> all_;
  std::map<std::string, std::vector<MessagePtr>> responses_;      // by id JSON
  std::map<std::string, std::vector<MessagePtr>> by_exec_id_;     // notifications
  std::map<std::string, std::vector<MessagePtr>> by_method_;      // notifications
  std::vector<std::string> transcript_;
};

}  // namespace abx::e2e
