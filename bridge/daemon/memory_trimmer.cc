#include "bridge/daemon/memory_trimmer.h"

#include <algorithm>
#include <string>

#include "bridge/api/grpc/serving_state.h"
#include "bridge/base/log.h"
#include "bridge/daemon/allocator.h"
#include "common/file_pages.h"

namespace abx::daemon {
namespace {

// Idleness is looked at this often.
constexpr std::chrono::milliseconds kIdleCheckPeriod(1000);

}  // namespace

MemoryTrimmer::MemoryTrimmer(Options options)
    : options_(options), thread_([this] { Loop(); }) {}

MemoryTrimmer::~MemoryTrimmer() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  thread_.join();
}

int64_t MemoryTrimmer::idle_releases() const {
  std::lock_guard<std::mutex> lock(mu_);
  return idle_releases_;
}

void MemoryTrimmer::Loop() {
  std::unique_lock<std::mutex> lock(mu_);
  while (!cv_.wait_for(lock, kIdleCheckPeriod, [this] { return stop_; })) {
    lock.unlock();
    if (options_.state != nullptr) CheckIdle(std::chrono::steady_clock::now());
    lock.lock();
  }
}

void MemoryTrimmer::CheckIdle(std::chrono::steady_clock::time_point now) {
  // A session that began (and maybe ended) since the last look counts as activity.
  const int64_t total = options_.state->sessions_total();
  if (options_.state->sessions_active() > 0 || total != seen_sessions_total_) {
    seen_sessions_total_ = total;
    idle_since_ = now;
    return;
  }
  if (released_at_sessions_total_ == total || now - idle_since_ < options_.idle_release_after) {
    return;
  }
  released_at_sessions_total_ = total;
  allocator::ReleaseFreeMemory();
  const ReleasedFilePages released = ReleaseCleanFilePages();
  {
    std::lock_guard<std::mutex> lock(mu_);
    ++idle_releases_;
  }
  log::Info("bridge.idle_release",
                  {{"mappings", std::to_string(released.mappings)},
                   {"file_pages_kib", std::to_string(released.resident_bytes / 1024)}});
}

}  // namespace abx::daemon
