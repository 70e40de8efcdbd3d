#include "bridge/core/terminals/terminal_registry.h"

#include "bridge/core/endpoint_cache.h"
#include "bridge/core/terminals/terminal.h"

namespace abx::core {

TerminalRegistry::~TerminalRegistry() = default;

TerminalRegistry& TerminalsOf(EndpointCache& cache) {
  return cache.parts().Get<TerminalRegistry>([] { return std::make_unique<TerminalRegistry>(); });
}

namespace {
std::string Key(const std::string& sandbox_id, const std::string& pty_id) { return sandbox_id + "\n" + pty_id; }
}  // namespace

std::shared_ptr<Terminal> TerminalRegistry::Find(const std::string& sandbox_id, const std::string& pty_id) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = terminals_.find(Key(sandbox_id, pty_id));
  return it == terminals_.end() ? nullptr : it->second;
}

void TerminalRegistry::Add(std::shared_ptr<Terminal> terminal) {
  std::lock_guard<std::mutex> lock(mu_);
  terminals_[Key(terminal->sandbox_id(), terminal->pty_id())] = std::move(terminal);
}

void TerminalRegistry::Remove(const Terminal* terminal) {
  // Destroyed, if this was the last reference, once the lock is let go: ~Terminal joins
  // the terminal's threads.
  std::shared_ptr<Terminal> removed;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = terminals_.find(Key(terminal->sandbox_id(), terminal->pty_id()));
    if (it == terminals_.end() || it->second.get() != terminal) return;
    removed = std::move(it->second);
    terminals_.erase(it);
  }
}

std::vector<std::shared_ptr<Terminal>> TerminalRegistry::Of(const std::string& sandbox_id) {
  std::vector<std::shared_ptr<Terminal>> out;
  std::lock_guard<std::mutex> lock(mu_);
  const std::string prefix = sandbox_id + "\n";
  for (auto& [key, terminal] : terminals_) {
    if (sandbox_id.empty() || key.compare(0, prefix.size(), prefix) == 0) out.push_back(terminal);
  }
  return out;
}

}  // namespace abx::core
