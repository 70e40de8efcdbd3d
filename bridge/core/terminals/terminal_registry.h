#pragma once
// The terminals this bridge holds in one server's sandboxes, shared by every session with
// that server and credential: a part of their EndpointCache (parts.h), so a terminal
// outlives the session that opened it.

#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "bridge/core/parts.h"

namespace abx::core {

class EndpointCache;
class Terminal;

class TerminalRegistry : public Part {
 public:
  ~TerminalRegistry() override;
  std::shared_ptr<Terminal> Find(const std::string& sandbox_id, const std::string& pty_id);
  // Keeps `terminal`, in place of one with its sandbox and id.
  void Add(std::shared_ptr<Terminal> terminal);
  // Lets go of `terminal`, unless another has taken its place.
  void Remove(const Terminal* terminal);
  // The terminals of a sandbox; of every sandbox for "".
  std::vector<std::shared_ptr<Terminal>> Of(const std::string& sandbox_id);

 private:
  std::mutex mu_;
  std::map<std::string, std::shared_ptr<Terminal>> terminals_;  // sandbox id + "\n" + pty id
};

// The terminals of a server's sandboxes, made on first use.
TerminalRegistry& TerminalsOf(EndpointCache& cache);

}  // namespace abx::core
