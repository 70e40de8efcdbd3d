#pragma once
// `abx-opensandbox-bridge egress SANDBOX_ID [get | allow TARGET... | deny TARGET... |
// remove TARGET...]`: a sandbox's egress rules through the running bridge (the Network
// service), for a person at a shell: open the network for an install, close it after.

#include <string>
#include <vector>

namespace abx::daemon {

// `words` is what follows the sandbox id: empty or "get" reads the rules; "allow" and
// "deny" add (or replace) a rule per target; "remove" drops the targets' rules. Prints
// the policy after, one rule a line ("allow pypi.org") under a line saying the default.
// Returns the exit code: 0; 1 with the error on stderr; 2 for a wrong use (usage).
int RunEgressCommand(const std::string& socket, const std::string& sandbox_id, const std::vector<std::string>& words);

// Whether `words` are a use of the command (checked before a bridge is reached).
bool IsEgressUse(const std::vector<std::string>& words);

}  // namespace abx::daemon
