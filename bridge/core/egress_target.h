#pragma once
// What an egress rule may name (docs/epp1.md §3, sandbox.network), for the rules of a
// create's network_policy (config.cc) and of a change (network/network.h): a host name
// (`pypi.org`), a wildcard of its subdomains (`*.pypi.org`, not the apex), or an IP
// address or CIDR. The sidecar itself takes any text as a domain, one that simply never
// matches: checking here turns a typo into an error instead of a rule that does nothing.

#include <optional>
#include <string>

namespace abx::core {

// Nullopt when `target` is one of the above; else why not, as a sentence's end
// ("is not a host name, *.domain, IP address or CIDR").
std::optional<std::string> EgressTargetProblem(const std::string& target);

}  // namespace abx::core
