#include "bridge/core/code_registry.h"

#include <iterator>

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

bool CodeRegistry::AnyReady(const std::string& sandbox_id) const {
  std::lock_guard<std::mutex> lock(mu_);
  const std::string prefix = Key(sandbox_id, "");
  auto it = ready_.lower_bound(prefix);
  return it != ready_.end() && it->compare(0, prefix.size(), prefix) == 0;
}

std::shared_ptr<RunQueue> CodeRegistry::Queue(const std::string& sandbox_id, const std::string& key) {
  std::lock_guard<std::mutex> lock(mu_);
  auto& queue = queues_[Key(sandbox_id, key)];
  if (!queue) queue = std::make_shared<RunQueue>("code context", "code.run");
  return queue;
}

void CodeRegistry::LinkQueue(const std::string& sandbox_id, const std::string& key,
                             const std::string& id) {
  std::lock_guard<std::mutex> lock(mu_);
  auto& queue = queues_[Key(sandbox_id, key)];
  if (!queue) queue = std::make_shared<RunQueue>("code context", "code.run");
  queues_[Key(sandbox_id, id)] = queue;
}

void CodeRegistry::ForgetQueue(const std::string& sandbox_id, const std::string& key) {
  std::lock_guard<std::mutex> lock(mu_);
  languages_.erase(Key(sandbox_id, key));
  auto it = queues_.find(Key(sandbox_id, key));
  if (it == queues_.end()) return;
  const std::shared_ptr<RunQueue> queue = it->second;
  for (auto q = queues_.begin(); q != queues_.end();) {
    if (q->second != queue) {
      ++q;
      continue;
    }
    languages_.erase(q->first);
    q = queues_.erase(q);
  }
}

void CodeRegistry::ForgetReadiness(const std::string& sandbox_id) {
  std::lock_guard<std::mutex> lock(mu_);
  const std::string prefix = sandbox_id + "\n";
  for (auto it = ready_.lower_bound(prefix); it != ready_.end() && it->compare(0, prefix.size(), prefix) == 0;) {
    it = ready_.erase(it);
  }
  for (auto it = languages_.lower_bound(prefix);
       it != languages_.end() && it->first.compare(0, prefix.size(), prefix) == 0;) {
    it = languages_.erase(it);
  }
}

std::optional<std::string> CodeRegistry::ContextLanguage(const std::string& sandbox_id,
                                                         const std::string& context_id) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = languages_.find(Key(sandbox_id, context_id));
  if (it == languages_.end()) return std::nullopt;
  return it->second;
}

void CodeRegistry::RememberContext(const std::string& sandbox_id, const std::string& context_id,
                                   const std::string& language) {
  std::lock_guard<std::mutex> lock(mu_);
  languages_[Key(sandbox_id, context_id)] = language;
}

}  // namespace abx::core
