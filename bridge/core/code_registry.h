#pragma once
// What the bridge keeps of the code interpreters of one server's sandboxes, shared by
// every session with that server and credential (it lives in their EndpointCache): for
// which languages a sandbox's interpreter has answered, the language of each context it
// has seen, and the run queue of each context.

#include <map>
#include <memory>
#include <mutex>
#include <optional>
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
  // The context is gone: its queue and its language go, under every key that names it.
  void ForgetQueue(const std::string& sandbox_id, const std::string& key);
  // The sandbox is gone (or was paused): ask again whether its interpreter answers, and
  // the language of each context.
  void ForgetReadiness(const std::string& sandbox_id);

  // A context's language, which never changes: learnt when the bridge made the context or
  // first listed it, so that a run naming it need not list the contexts again.
  std::optional<std::string> ContextLanguage(const std::string& sandbox_id, const std::string& context_id) const;
  void RememberContext(const std::string& sandbox_id, const std::string& context_id, const std::string& language);

 private:
  mutable std::mutex mu_;
  std::set<std::string> ready_;  // sandbox id + "\n" + language
  std::map<std::string, std::shared_ptr<RunQueue>> queues_;  // sandbox id + "\n" + key
  std::map<std::string, std::string> languages_;              // sandbox id + "\n" + context id
};

}  // namespace abx::core
