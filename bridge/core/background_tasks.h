#pragma once
// Work that may outlive the request that started it, such as interrupting a command at
// execd once its request was cancelled (core/exec.cc). At most `max_threads` threads
// run such work; more tasks wait in order for one of them, so a burst of cancels never
// becomes a burst of threads. The threads start when there is work and end when there
// is none, so an idle bridge holds none. The destructor waits for every task, queued or
// running, so none outlives what it uses (the HTTP client).

#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
#include <mutex>

namespace abx::core {

class BackgroundTasks {
 public:
  explicit BackgroundTasks(size_t max_threads);
  ~BackgroundTasks();
  BackgroundTasks(const BackgroundTasks&) = delete;
  BackgroundTasks& operator=(const BackgroundTasks&) = delete;

  void Run(std::function<void()> task);

  struct Stats {
    size_t threads = 0;  // running now
    size_t queued = 0;   // waiting for a thread
  };
  Stats stats() const;

 private:
  void Work();

  const size_t max_threads_;
  mutable std::mutex mu_;
  std::condition_variable all_done_;
  std::deque<std::function<void()>> queue_;
  size_t threads_ = 0;  // guarded by mu_
};

}  // namespace abx::core
