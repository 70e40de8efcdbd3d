#include "bridge/daemon/request_pool.h"

#include <condition_variable>
#include <deque>
#include <mutex>
#include <thread>
#include <utility>

namespace abx::daemon {

// Shared with the threads, so a thread that outlives the pool (still running its task)
// still has it.
struct RequestPool::State {
  explicit State(RequestPoolOptions the_options) : options(the_options) {}

  // Threads idle and free to take a task: each queued task is promised to one of the
  // waiting threads already.
  size_t FreeIdle() const { return waiting - tasks.size(); }

  const RequestPoolOptions options;
  std::mutex mu;
  std::condition_variable cv;       // a task was queued, or idle threads must go
  std::condition_variable left_cv;  // an idle thread stopped waiting
  // Under mu.
  std::deque<std::function<void()>> tasks;  // handed to waiting threads, one each
  size_t threads = 0;
  size_t waiting = 0;  // threads in the idle wait
  uint64_t threads_started = 0;
  uint64_t release_epoch = 0;  // ReleaseIdle() calls
  bool stopping = false;
};

RequestPool::RequestPool(RequestPoolOptions options)
    : state_(std::make_shared<State>(options)) {}

RequestPool::~RequestPool() {
  std::lock_guard<std::mutex> lock(state_->mu);
  state_->stopping = true;
  state_->cv.notify_all();
}

void RequestPool::Run(std::function<void()> task) {
  {
    std::lock_guard<std::mutex> lock(state_->mu);
    if (state_->FreeIdle() > 0) {
      state_->tasks.push_back(std::move(task));
      state_->cv.notify_one();
      return;
    }
    ++state_->threads;
    ++state_->threads_started;
  }
  try {
    std::thread(Work, state_, std::move(task)).detach();
  } catch (...) {  // no thread to be had (std::system_error): as with a bare std::thread
    std::lock_guard<std::mutex> lock(state_->mu);
    --state_->threads;
    throw;
  }
}

void RequestPool::ReleaseIdle(std::chrono::milliseconds wait) {
  std::unique_lock<std::mutex> lock(state_->mu);
  ++state_->release_epoch;
  state_->cv.notify_all();
  // Threads that go idle after this call wait again (the next request may want them);
  // when the last session has ended there are none.
  state_->left_cv.wait_for(lock, wait, [&] { return state_->waiting == 0; });
}

RequestPool::Stats RequestPool::stats() const {
  std::lock_guard<std::mutex> lock(state_->mu);
  Stats stats;
  stats.threads = state_->threads;
  stats.idle = state_->FreeIdle();
  stats.threads_started = state_->threads_started;
  return stats;
}

void RequestPool::Work(std::shared_ptr<State> state, std::function<void()> task) {
  State& s = *state;
  for (;;) {
    task();
    task = nullptr;  // what it captured (the request) goes now, outside the lock
    std::unique_lock<std::mutex> lock(s.mu);
    if (s.stopping || s.FreeIdle() >= s.options.max_idle) break;
    ++s.waiting;
    const uint64_t epoch = s.release_epoch;
    s.cv.wait_for(lock, s.options.idle_timeout, [&] {
      return !s.tasks.empty() || s.stopping || s.release_epoch != epoch;
    });
    --s.waiting;
    s.left_cv.notify_all();
    // A queued task was promised to a waiting thread: whoever wakes takes it, also when
    // released or stopping at the same moment.
    if (s.tasks.empty()) break;
    task = std::move(s.tasks.front());
    s.tasks.pop_front();
  }
  std::lock_guard<std::mutex> lock(s.mu);
  --s.threads;
}

}  // namespace abx::daemon
