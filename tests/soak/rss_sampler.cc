#include "tests/soak/rss_sampler.h"

#include <algorithm>
#include <cstdlib>
#include <string>

namespace abx::soak {

std::optional<int64_t> ReadRssKiB(pid_t pid) {
  const std::string status = e2e::ReadFile("/proc/" + std::to_string(pid) + "/status");
  const size_t at = status.find("\nVmRSS:");
  if (at == std::string::npos) return std::nullopt;
  return std::strtoll(status.c_str() + at + 7, nullptr, 10);  // "VmRSS:   12345 kB"
}

RssSampler::RssSampler(pid_t pid, e2e::Millis interval)
    : pid_(pid), interval_(interval), thread_([this] {
        while (!stop_) {
          if (auto rss = ReadRssKiB(pid_)) {
            std::lock_guard<std::mutex> lock(mutex_);
            samples_.push_back(*rss);
          }
          const auto until = e2e::Clock::now() + interval_;
          while (!stop_ && e2e::Clock::now() < until) {
            std::this_thread::sleep_for(e2e::Millis(20));
          }
        }
      }) {}

RssSampler::~RssSampler() { Stop(); }

void RssSampler::Stop() {
  stop_ = true;
  if (thread_.joinable()) thread_.join();
}

std::vector<int64_t> RssSampler::samples() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return samples_;
}

int64_t Median(std::vector<int64_t> values) {
  if (values.empty()) return 0;
  std::sort(values.begin(), values.end());
  return values[values.size() / 2];
}

}  // namespace abx::soak
