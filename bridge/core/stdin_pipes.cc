#include "bridge/core/stdin_pipes.h"

#include <chrono>

#include "bridge/base/time_util.h"

namespace abx::core {

void StdinPipes::Add(const std::string& sandbox_id, const std::string& exec_id) {
  std::lock_guard<std::mutex> lock(mu_);
  auto pipe = std::make_shared<Pipe>();
  pipe->sandbox_id = sandbox_id;
  pipes_[exec_id] = std::move(pipe);
}

void StdinPipes::SetHolder(const std::string& exec_id, int pid) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = pipes_.find(exec_id);
  if (it == pipes_.end()) return;
  it->second->state.holder_pid = pid;
  changed_.notify_all();
}

void StdinPipes::SetFailed(const std::string& exec_id, std::string why) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = pipes_.find(exec_id);
  if (it == pipes_.end()) return;
  it->second->state.failure = std::move(why);
  changed_.notify_all();
}

void StdinPipes::SetClosed(const std::string& exec_id) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = pipes_.find(exec_id);
  if (it != pipes_.end()) it->second->state.closed = true;
}

void StdinPipes::SetEnded(const std::string& exec_id) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = pipes_.find(exec_id);
  if (it == pipes_.end() || it->second->state.ended) return;
  it->second->state.ended = true;
  changed_.notify_all();
  ended_.push_back(exec_id);
  while (ended_.size() > kMaxEnded) {
    pipes_.erase(ended_.front());
    ended_.pop_front();
  }
}

bool StdinPipes::Open(const std::string& exec_id) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = pipes_.find(exec_id);
  if (it == pipes_.end()) return false;
  const State& state = it->second->state;
  return state.holder_pid > 0 && !state.closed && !state.ended;
}

std::shared_ptr<StdinPipes::Pipe> StdinPipes::FindLocked(const std::string& sandbox_id,
                                                         const std::string& exec_id) {
  auto it = pipes_.find(exec_id);
  if (it == pipes_.end() || it->second->sandbox_id != sandbox_id) return nullptr;
  return it->second;
}

std::shared_ptr<RunQueue> StdinPipes::Queue(const std::string& sandbox_id, const std::string& exec_id) {
  std::lock_guard<std::mutex> lock(mu_);
  auto pipe = FindLocked(sandbox_id, exec_id);
  return pipe ? pipe->queue : nullptr;
}

Result<StdinPipes::State> StdinPipes::AwaitHolder(const std::string& sandbox_id, const std::string& exec_id,
                                                  int64_t deadline_ms, CancelToken* cancel) {
  std::weak_ptr<Signal> signal = signal_;
  cancel->OnCancel([signal] {
    if (auto s = signal.lock()) {
      std::lock_guard<std::mutex> lock(s->mu);
      s->changed.notify_all();
    }
  });
  std::unique_lock<std::mutex> lock(mu_);
  for (;;) {
    auto pipe = FindLocked(sandbox_id, exec_id);
    if (!pipe) return MakeError(ErrorCode::kNotFound, "no command " + exec_id + " in sandbox " + sandbox_id);
    const State& state = pipe->state;
    if (state.holder_pid || !state.failure.empty() || state.ended) return state;
    if (cancel->cancelled()) return MakeError(ErrorCode::kCancelled, "process.stdin was cancelled");
    const int64_t left = deadline_ms - NowMillis();
    if (left <= 0) {
      return MakeError(ErrorCode::kUnreachable,
                       "the stdin pipe of command " + exec_id + " was not ready in time");
    }
    changed_.wait_for(lock, std::chrono::milliseconds(left));
  }
}

}  // namespace abx::core
