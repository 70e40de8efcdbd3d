#include "bridge/core/code_registry.h"

namespace abx::core {
namespace {

std::string Key(const std::string& sandbox_id, const std::string& part) {
  return sandbox_id + "\n" + part;
}

}  // namespace

bool CodeRegistry::Ready(const std::string& sandbox_id, const std::string& language) const {
  std::lock_guard<std::mutex> lock(mu_);
  return ready_.count(Key(sandbox_id, language)) > 0;
}

void CodeRegistry::MarkReady(const std::string& sandbox_id, const std::string& language) {
  std::lock_guard<std::mutex> lock(mu_);
  ready_.insert(Key(sandbox_id, language));
}

std::shared_ptr<CodeQueue> CodeRegistry::Queue(const std::string& sandbox_id, const std::string& key) {
  std::lock_guard<std::mutex> lock(mu_);
  auto& queue = queues_[Key(sandbox_id, key)];
  if (!queue) queue = std::make_shared<CodeQueue>();
  return queue;
}

void CodeRegistry::ForgetQueue(const std::string& sandbox_id, const std::string& key) {
  std::lock_guard<std::mutex> lock(mu_);
  queues_.erase(Key(sandbox_id, key));
}

void CodeRegistry::ForgetReadiness(const std::string& sandbox_id) {
  std::lock_guard<std::mutex> lock(mu_);
  const std::string prefix = sandbox_id + "\n";
  for (auto it = ready_.lower_bound(prefix); it != ready_.end() && it->compare(0, prefix.size(), prefix) == 0;) {
    it = ready_.erase(it);
  }
}

}  // namespace abx::core
