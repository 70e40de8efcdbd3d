#pragma once
// Tasks that must run in the order they were handed over, per key, on a TaskRunner:
// a terminal's pty.input, pty.resize and pty.signal of one session, which a host may
// send without waiting for the answers. One task of a key runs at a time; tasks of
// other keys run beside it.

#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "bridge/base/task_runner.h"

namespace abx {

class SerialLanes {
 public:
  explicit SerialLanes(TaskRunner* runner);
  // `runner` must outlive the tasks; this object need not (a lane keeps its own state).
  void Run(const std::string& key, std::function<void()> task);

 private:
  struct State {
    std::mutex mu;
    std::map<std::string, std::deque<std::function<void()>>> lanes;  // front: the running task
  };
  static void Drain(std::shared_ptr<State> state, const std::string& key);

  TaskRunner* runner_;
  std::shared_ptr<State> state_ = std::make_shared<State>();
};

}  // namespace abx
