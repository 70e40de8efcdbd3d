#pragma once

// The notifications of one attached exec.start, gathered and checked against the rules
// of docs/epp1.md §3: `exec.output` seq from 0 and rising by one, stream stdout|stderr, data a
// string; exactly one `exec.exit`, and nothing for that exec_id after it; none of it
// before the exec.start response.

#include <cstddef>
#include <string>
#include <vector>

#include "tests/e2e/epp_session.h"

namespace abx::e2e {

struct ExecTrace {
  std::string stdout_data;  // every stdout chunk, concatenated in seq order
  std::string stderr_data;
  MessagePtr exit;          // the first exec.exit; null when none came in time
  size_t output_count = 0;  // exec.output notifications
  size_t exit_count = 0;    // exec.exit notifications (must be 1)
  // Every rule broken, each naming the offending line. Empty when all is well.
  std::vector<std::string> problems;
};

// Waits up to `timeout` for the exec.exit of `exec_id`, then `settle` longer for anything
// that (wrongly) follows it, and checks what came. `response` is the exec.start response
// (its arrival index bounds the notifications); null skips that check.
ExecTrace TraceExec(EppSession* shim, const std::string& exec_id, const MessagePtr& response,
                    Millis timeout = Millis(20000), Millis settle = Millis(300));

// All problems on one line each, for a failure message.
std::string JoinProblems(const ExecTrace& trace);

}  // namespace abx::e2e
