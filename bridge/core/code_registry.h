#pragma once
// What the bridge keeps of the code interpreters of one server's sandboxes, shared by
// every session with that server and credential (it lives in their EndpointCache): for
// which languages a sandbox's interpreter has answered, and the run queue of each
// context.

#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>

#include "bridge/core/run_queue.h"

namespace abx::core {

class CodeRegistry {
 public:
  bool Ready(const std::string& sandbox_id, const std::string& language) const;
  void MarkReady(const std::string& sandbox_id, const std::string& language);
  // Whether the sandbox's interpreter has answered for some language.
  bool AnyReady(const std::string& sandbox_id) const;
  // The queue of a context (`key`: its id, or "default:<language>" for the language's
  // default context), made on first use.
  std::shared_ptr<RunQueue> Queue(const std::string& sandbox_id, const std::string& key);
  // The default context of a language has turned out to be context `id`: both keys name
  // one queue from now on, so runs that name it by id wait in the same line.
  void LinkQueue(const std::string& sandbox_id, const std::string& key, const std::string& id);
  // The context is gone: its queue goes, under every key that names it.
  void ForgetQueue(const std::string& sandbox_id, const std::string& key);
  // The sandbox is gone (or was paused): ask again whether its interpreter answers.
  void ForgetReadiness(const std::string& sandbox_id);

 private:
  mutable std::mutex mu_;
  std::set<std::string> ready_;  // sandbox id + "\n" + language
  std::map<std::string, std::shared_ptr<RunQueue>> queues_;  // sandbox id + "\n" + key
};

}  // namespace abx::core
