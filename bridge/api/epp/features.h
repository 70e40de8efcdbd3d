#pragma once
// What `initialize` declares. The manifest (abx-provider.toml) must say the same; a test
// compares them. The limits it declares are common/limits.h's.

#include <string>

#include "common/limits.h"

namespace abx::epp {

inline constexpr const char* kFeatures[] = {
    "sandbox.lifecycle", "sandbox.timeout", "sandbox.pause", "exec.run",       "exec.stream",
    "process.manage",    "files.rw",        "ports.url",     "sessions",       "code.interpret",
    "pty",               "templates",
};
inline constexpr const char* kExtensions[] = {"exec.detached", "exec.shell",     "files.search",    "files.chmod",
                                              "files.transfer", "sandbox.metrics", "sandbox.snapshot",
                                              "sandbox.metadata", "sandbox.pool", "files.watch",
                                              "sandbox.network"};
struct Partial {
  const char* feature;
  const char* note;
};
inline constexpr Partial kPartial[] = {
    {"process.manage", "an execd command id accepts only SIGKILL"},
    {"code.interpret",
     "only the last expression's value is passed on, not display() output; input() is unavailable"},
    {"exec.shell", "stderr arrives as stdout; blank lines are dropped"},
};

// The "partial" object of initialize and provider.info.
std::string PartialJson();

}  // namespace abx::epp
