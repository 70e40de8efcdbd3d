#pragma once

// One abx-opensandbox-shim process for the load soak, driven over stdin/stdout as a host
// drives it. Unlike the end-to-end harness's EppSession it keeps nothing once consumed
// (a soak session sends thousands of requests with megabytes of output), but it still
// accounts for every line: each response is matched to a request sent, each request
// must be answered exactly once, and every stdout line must be a JSON-RPC 2.0 object.

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

namespace abx::soak {

using e2e::Clock;
using e2e::Millis;

// The notifications of one attached exec.start, checked as they arrive.
struct StreamResult {
  std::string stdout_data;
  std::string stderr_data;
  std::optional<int64_t> exit_code;  // exec.exit's exit_code when it was a number
  bool exited = false;               // an exec.exit came
  size_t outputs = 0;                // exec.output notifications
  std::vector<std::string> problems; // seq gaps, second exits, output after the exit, ...
};

class SoakClient {
 public:
  static std::unique_ptr<SoakClient> Start(const std::string& shim_path,
                                           const std::vector<std::string>& env,
                                           const std::string& stderr_path, std::string* error);
  // Closes stdin, gives the shim 5 s to exit, then kills it.
  ~SoakClient();
  SoakClient(const SoakClient&) = delete;
  SoakClient& operator=(const SoakClient&) = delete;

  // Sends a request and waits for its response (null on timeout; the request stays
  // counted, and a late answer is still accounted for).
  std::shared_ptr<const rapidjson::Document> Call(const std::string& method,
                                                  const std::string& params_json,
                                                  Millis timeout);
  // exec.start of `params_json`; the response, then every notification for its exec_id
  // until exec.exit (or `timeout` in all). `start_response` gets the exec.start answer.
  StreamResult Stream(const std::string& params_json, Millis timeout,
                      std::shared_ptr<const rapidjson::Document>* start_response);

  // Closes stdin and waits for the shim to exit; its status ("" when it had to be killed).
  std::string Finish(Millis timeout);

  // The accounting, once the session is over (call after Finish):
  int64_t requests_sent() const;
  int64_t responses_received() const;
  int64_t stdout_bytes() const;
  // Requests answered never or more than once, answers to unknown ids, lines that are
  // not JSON-RPC 2.0, notifications for an exec nobody started. Empty when all is well.
  std::vector<std::string> AccountingProblems() const;

 private:
  struct Notification {
    std::string method;
    std::string stream;  // exec.output
    std::string data;
    int64_t seq = -1;
    std::optional<int64_t> exit_code;
    std::string raw;     // exec.exit only, for messages
  };

  SoakClient() = default;
  void ReadLoop();
  void File(const std::string& line);
  int64_t Send(const std::string& method, const std::string& params_json);
  std::shared_ptr<const rapidjson::Document> Wait(int64_t id, Clock::time_point deadline);

  std::unique_ptr<e2e::Process> process_;
  std::thread reader_;
  std::mutex write_mutex_;

  mutable std::mutex mutex_;
  std::condition_variable changed_;
  bool eof_ = false;
  int64_t next_id_ = 1;
  std::vector<int> answers_;  // answers_[id] = responses seen for id (index 0 unused)
  std::map<int64_t, std::shared_ptr<const rapidjson::Document>> unclaimed_;  // by id
  std::map<std::string, std::vector<Notification>> notifications_;           // by exec_id
  std::vector<std::string> problems_;
  int64_t responses_ = 0;
  int64_t stdout_bytes_ = 0;
};

}  // namespace abx::soak
