#include "tests/fake-opensandbox/code_contexts.h"

#include <thread>

#include "tests/fake-opensandbox/ids.h"

namespace fake_opensandbox {

bool CodeContexts::WaitForever() {
  std::unique_lock<std::mutex> lock(mutex_);
  shutdown_cv_.wait(lock, [this] { return shut_down_; });
  return false;
}

std::shared_ptr<CodeContext> CodeContexts::Create(const std::string& language,
                                                  const KernelPlace& place, std::string* error) {
  if (jupyter_ != JupyterState::kRunning || language != "python") {
    WaitForever();
    *error = "execd is shutting down";
    return nullptr;
  }
  auto context = std::make_shared<CodeContext>();
  context->id = NewUuid4();
  context->language = language;
  context->kernel = KernelProcess::Start(place, log_dir_ + "/kernel-" + context->id + ".log", error);
  if (!context->kernel) return nullptr;
  std::lock_guard<std::mutex> lock(mutex_);
  if (shut_down_) {
    *error = "execd is shutting down";
    return nullptr;
  }
  contexts_[context->id] = context;
  ++stats_->kernels_alive;
  return context;
}

std::shared_ptr<CodeContext> CodeContexts::Default(const std::string& language,
                                                   const KernelPlace& place, std::string* error) {
  std::lock_guard<std::mutex> one_at_a_time(default_creation_);
  {
    std::lock_guard<std::mutex> lock(mutex_);
    auto id = default_ids_.find(language);
    if (id != default_ids_.end()) {
      auto context = contexts_.find(id->second);
      if (context != contexts_.end()) return context->second;
    }
  }
  auto context = Create(language, place, error);
  if (!context) return nullptr;
  std::lock_guard<std::mutex> lock(mutex_);
  default_ids_[language] = context->id;
  return context;
}

std::shared_ptr<CodeContext> CodeContexts::Find(const std::string& id) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = contexts_.find(id);
  return it == contexts_.end() ? nullptr : it->second;
}

std::vector<std::shared_ptr<CodeContext>> CodeContexts::List(const std::string& language) {
  std::lock_guard<std::mutex> lock(mutex_);
  std::vector<std::shared_ptr<CodeContext>> out;
  for (const auto& [id, context] : contexts_) {
    if (language.empty() || context->language == language) out.push_back(context);
  }
  return out;
}

bool CodeContexts::Delete(const std::string& id) {
  std::shared_ptr<CodeContext> doomed;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = contexts_.find(id);
    if (it == contexts_.end()) return false;
    doomed = std::move(it->second);
    contexts_.erase(it);
    for (auto d = default_ids_.begin(); d != default_ids_.end(); ++d) {
      if (d->second == id) {
        default_ids_.erase(d);
        break;
      }
    }
  }
  // The kernel dies with the context (a run in progress holds its own reference and
  // ends when the kernel is gone).
  doomed->kernel->KillKernel();
  --stats_->kernels_alive;
  return true;
}

void CodeContexts::DeleteLanguage(const std::string& language) {
  for (const auto& context : List(language)) Delete(context->id);
}

bool CodeContexts::Interrupt(const std::string& id, int64_t delay_ms) {
  std::shared_ptr<CodeContext> context = Find(id);
  if (!context) return false;
  if (delay_ms <= 0) {
    context->kernel->Interrupt();
  } else {
    std::thread([context, delay_ms] {
      std::this_thread::sleep_for(std::chrono::milliseconds(delay_ms));
      context->kernel->Interrupt();
    }).detach();
  }
  return true;
}

void CodeContexts::Shutdown() {
  std::map<std::string, std::shared_ptr<CodeContext>> all;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    shut_down_ = true;
    all.swap(contexts_);
    default_ids_.clear();
  }
  shutdown_cv_.notify_all();
  for (auto& [id, context] : all) {
    context->kernel->KillKernel();
    --stats_->kernels_alive;
  }
}

}  // namespace fake_opensandbox
