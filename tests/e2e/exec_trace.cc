#include "tests/e2e/exec_trace.h"

#include <thread>

#include "tests/e2e/json_util.h"

namespace abx::e2e {

ExecTrace TraceExec(EppSession* shim, const std::string& exec_id, const MessagePtr& response,
                    Millis timeout, Millis settle) {
  ExecTrace trace;
  trace.exit = shim->WaitExecExit(exec_id, timeout);
  if (!trace.exit) {
    trace.problems.push_back("no exec.exit for " + exec_id + " within " +
                             std::to_string(timeout.count()) + " ms");
  }
  std::this_thread::sleep_for(settle);

  int64_t expected_seq = 0;
  bool exit_seen = false;
  for (const MessagePtr& m : shim->Notifications(exec_id)) {
    const std::string where = "line " + std::to_string(m->index) + " " + Abbreviate(m->raw, 300);
    if (response && m->index < response->index) {
      trace.problems.push_back("notification before the exec.start response: " + where);
    }
    if (exit_seen) trace.problems.push_back("notification after exec.exit: " + where);
    const rapidjson::Value& params = m->params();
    if (m->method() == "exec.output") {
      ++trace.output_count;
      const rapidjson::Value* seq = Find(params, "seq");
      if (!seq || !seq->IsInt64()) {
        trace.problems.push_back("exec.output without an integer seq: " + where);
      } else if (seq->GetInt64() != expected_seq) {
        trace.problems.push_back("seq " + std::to_string(seq->GetInt64()) + " where " +
                                 std::to_string(expected_seq) + " was due: " + where);
        expected_seq = seq->GetInt64() + 1;
      } else {
        ++expected_seq;
      }
      const rapidjson::Value* data = Find(params, "data");
      if (!data || !data->IsString()) {
        trace.problems.push_back("exec.output without string data: " + where);
        continue;
      }
      const std::string text(data->GetString(), data->GetStringLength());
      const std::string stream = GetString(params, "stream");
      if (stream == "stdout") {
        trace.stdout_data += text;
      } else if (stream == "stderr") {
        trace.stderr_data += text;
      } else {
        trace.problems.push_back("stream is neither stdout nor stderr: " + where);
      }
    } else if (m->method() == "exec.exit") {
      ++trace.exit_count;
      exit_seen = true;
      for (const char* field : {"exit_code", "signal", "timed_out", "cancelled", "error"}) {
        if (!Find(params, field)) {
          trace.problems.push_back(std::string("exec.exit without \"") + field + "\": " + where);
        }
      }
    } else {
      trace.problems.push_back("unexpected notification for the exec: " + where);
    }
  }
  if (trace.exit_count > 1) {
    trace.problems.push_back(std::to_string(trace.exit_count) + " exec.exit notifications");
  }
  return trace;
}

std::string JoinProblems(const ExecTrace& trace) {
  std::string out;
  for (const std::string& problem : trace.problems) out += "\n  " + problem;
  return out;
}

}  // namespace abx::e2e
