#pragma once
// What `initialize` declares. The manifest (abx-provider.toml) must say the same; a test
// compares them. The limits it declares are common/limits.h's.

#include "common/limits.h"

namespace abx::epp {

inline constexpr const char* kFeatures[] = {
    "sandbox.lifecycle", "sandbox.timeout", "sandbox.pause", "exec.run", "exec.stream",
    "process.manage",    "files.rw",        "ports.url",     "sessions",
};
inline constexpr const char* kExtensions[] = {"exec.detached", "files.search", "files.chmod",
                                              "sandbox.metrics"};
inline constexpr const char* kPartialFeature = "process.manage";
inline constexpr const char* kPartialNote =
    "process.stdin is E8004; an execd command id accepts only SIGKILL";

}  // namespace abx::epp
