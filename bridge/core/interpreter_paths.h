#pragma once
// Where upstream's code-interpreter images keep the script that starts Jupyter
// (docs/opensandbox.md §2.13): what a sandbox made from one must run as its entrypoint
// (core/sandboxes) and what an error about a missing kernel names (core/code). A header
// of its own, so that code needs nothing of sandboxes for it.

namespace abx::core {

// code-interpreter v1.1.0 and newer.
inline constexpr const char* kCodeInterpreterScript = "/opt/code-interpreter/code-interpreter.sh";
// Images before code-interpreter v1.1.0 (v1.0.2 and older).
inline constexpr const char* kOldCodeInterpreterScript = "/opt/opensandbox/code-interpreter.sh";

}  // namespace abx::core
