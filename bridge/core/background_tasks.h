#pragma once
// Work that may outlive the request that started it, such as interrupting a command at
// execd once its request was cancelled (core/exec/exec.cc). At most `max_threads` threads
// run such work; more tasks wait in order for one of them, so a burst of cancels never
// becomes a burst of threads. A task due later (RunAt) holds no thread while it waits:
// one timer thread keeps every deadline. The threads start when there is work and end
// when there is none, so an idle bridge holds none. The destructor runs what is still
// due (at once) and waits for every task, so none outlives what it uses (the HTTP client).

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>

namespace abx::core {

// Work that may outlive the request that starts it, as a core class sees it
// (BridgeCore::Runner): `run_after` runs a task after a delay without holding a thread
// meanwhile; `stopping` says the daemon is going away, so polling should end;
// `keep_alive` keeps an idle daemon from exiting while its result is held (work owed to
// the server, such as deleting a snapshot nobody got an answer for).
struct BackgroundRunner {
  std::function<void(std::chrono::milliseconds, std::function<void()>)> run_after;
  std::function<bool()> stopping;
  std::function<std::shared_ptr<void>()> keep_alive;
};

class BackgroundTasks {
 public:
  using Clock = std::chrono::steady_clock;

  explicit BackgroundTasks(size_t max_threads);
  ~BackgroundTasks();
  BackgroundTasks(const BackgroundTasks&) = delete;
  BackgroundTasks& operator=(const BackgroundTasks&) = delete;

  void Run(std::function<void()> task);
  // Runs `task` as Run does once `when` has come (at once when it has).
  void RunAt(Clock::time_point when, std::function<void()> task);

  struct Stats {
    size_t threads = 0;  // running tasks now
    size_t queued = 0;   // waiting for a thread
    size_t timers = 0;   // waiting for their time
  };
  Stats stats() const;
  // The destructor has begun: what waits runs at once, so work that polls should stop.
  bool stopping() const;

 private:
  void StartWorkerLocked();  // one more thread, if the bound allows
  void Work();
  void KeepTime();

  const size_t max_threads_;
  mutable std::mutex mu_;
  std::condition_variable all_done_;
  std::condition_variable timers_changed_;
  // Under mu_.
  std::deque<std::function<void()>> queue_;
  std::multimap<Clock::time_point, std::function<void()>> timers_;
  size_t threads_ = 0;
  bool keeping_time_ = false;  // the timer thread runs
  bool stopping_ = false;
};

}  // namespace abx::core
