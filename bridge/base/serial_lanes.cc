#include "bridge/base/serial_lanes.h"

#include <utility>

namespace abx {

SerialLanes::SerialLanes(TaskRunner* runner) : runner_(runner) {}

void SerialLanes::Run(const std::string& key, std::function<void()> task) {
  bool start;
  {
    std::lock_guard<std::mutex> lock(state_->mu);
    auto& lane = state_->lanes[key];
    start = lane.empty();
    lane.push_back(std::move(task));
  }
  if (start) runner_->Run([state = state_, key] { Drain(state, key); });
}

void SerialLanes::Drain(std::shared_ptr<State> state, const std::string& key) {
  for (;;) {
    std::function<void()> task;
    {
      std::lock_guard<std::mutex> lock(state->mu);
      task = std::move(state->lanes[key].front());
    }
    task();
    std::lock_guard<std::mutex> lock(state->mu);
    auto it = state->lanes.find(key);
    it->second.pop_front();
    if (it->second.empty()) {
      state->lanes.erase(it);
      return;
    }
  }
}

}  // namespace abx
