#include "bridge/core/shell_registry.h"

#include <chrono>
#include <vector>

namespace abx::core {
namespace {

std::string Key(const std::string& sandbox_id, const std::string& part) { return sandbox_id + "\n" + part; }

}  // namespace

bool ShellRunStop::Stop(Why why) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (sealed_ || why_ != Why::kNone) return false;
    why_ = why;
  }
  abort_.Cancel();
  return true;
}

ShellRunStop::Why ShellRunStop::Seal() {
  std::lock_guard<std::mutex> lock(mu_);
  sealed_ = true;
  return why_;
}

void ShellRunStop::MarkOver() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    over_ = true;
  }
  over_cv_.notify_all();
}

bool ShellRunStop::WaitOver(int64_t timeout_ms) {
  std::unique_lock<std::mutex> lock(mu_);
  return over_cv_.wait_for(lock, std::chrono::milliseconds(timeout_ms), [&] { return over_; });
}

std::shared_ptr<RunQueue> ShellRegistry::Queue(const std::string& sandbox_id, const std::string& shell_id) {
  std::lock_guard<std::mutex> lock(mu_);
  auto& queue = queues_[Key(sandbox_id, shell_id)];
  if (!queue) queue = std::make_shared<RunQueue>("shell", "the shell command");
  return queue;
}

void ShellRegistry::ForgetShell(const std::string& sandbox_id, const std::string& shell_id) {
  std::lock_guard<std::mutex> lock(mu_);
  queues_.erase(Key(sandbox_id, shell_id));
}

void ShellRegistry::AddRun(const std::string& sandbox_id, const std::string& exec_id, const std::string& shell_id,
                           std::shared_ptr<ShellRunStop> run) {
  std::lock_guard<std::mutex> lock(mu_);
  runs_[Key(sandbox_id, exec_id)] = Run{shell_id, std::move(run)};
}

void ShellRegistry::RemoveRun(const std::string& sandbox_id, const std::string& exec_id) {
  std::lock_guard<std::mutex> lock(mu_);
  runs_.erase(Key(sandbox_id, exec_id));
}

bool ShellRegistry::KillRun(const std::string& sandbox_id, const std::string& exec_id, int64_t timeout_ms) {
  std::shared_ptr<ShellRunStop> run;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = runs_.find(Key(sandbox_id, exec_id));
    if (it == runs_.end()) return false;
    run = it->second.stop;
  }
  // false when it is already ending by itself (or by another stop).
  const bool stopped = run->Stop(ShellRunStop::Why::kKilled);
  run->WaitOver(timeout_ms);
  return stopped;
}

void ShellRegistry::KillRunsOf(const std::string& sandbox_id, const std::string& shell_id, int64_t timeout_ms) {
  std::vector<std::shared_ptr<ShellRunStop>> runs;
  {
    std::lock_guard<std::mutex> lock(mu_);
    const std::string prefix = sandbox_id + "\n";
    for (auto it = runs_.lower_bound(prefix); it != runs_.end() && it->first.compare(0, prefix.size(), prefix) == 0;
         ++it) {
      if (it->second.shell_id == shell_id) runs.push_back(it->second.stop);
    }
  }
  for (auto& run : runs) run->Stop(ShellRunStop::Why::kKilled);
  for (auto& run : runs) run->WaitOver(timeout_ms);
}

bool ShellRegistry::Running(const std::string& sandbox_id, const std::string& exec_id) const {
  std::lock_guard<std::mutex> lock(mu_);
  return runs_.count(sandbox_id + "\n" + exec_id) > 0;
}

}  // namespace abx::core
