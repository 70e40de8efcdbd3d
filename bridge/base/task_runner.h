#pragma once
// Where a front door runs the work of a request: each EPP request, and an upload that
// starts while its line still arrives. The daemon provides it (its request pool,
// bridge/daemon/request_pool.h); tests may run tasks on plain threads.

#include <functional>

namespace abx {

class TaskRunner {
 public:
  virtual ~TaskRunner() = default;
  // Runs `task` soon on some thread; never on the caller's, never queued behind a task
  // that may block for long.
  virtual void Run(std::function<void()> task) = 0;
};

}  // namespace abx
