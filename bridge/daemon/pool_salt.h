#pragma once
// The user's secret for warm-pool keys (bridge/core/sandboxes/warm_pool.h). A pooled sandbox carries
// its key as a label anyone who can list the server's sandboxes reads; the key hashes the
// API key among other things, so without a secret mixed in a weak API key could be
// guessed offline from it. The salt lives beside the bridge's socket (a directory only
// the user reaches), so every daemon of the user on this host shares it and adopts what
// an earlier one left; after a reboot clears it, that pool simply expires (pool_ttl).

#include <string>

namespace abx {

// 32 random hex characters read from `dir`/pool-salt, made there first if missing (made
// whole or not at all, so two daemons starting at once read the same). On failure:
// a salt of this process alone (its pool is then adopted by no later daemon), and
// `*error` says why.
std::string LoadOrCreatePoolSalt(const std::string& dir, std::string* error);

}  // namespace abx
