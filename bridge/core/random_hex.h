#pragma once
// Random lowercase hex, for the names the bridge makes up inside a sandbox (a stdin
// file, a command's tag, a shell command's id). Not for secrets.

#include <cstddef>
#include <string>

namespace abx::core {

std::string RandomHex(size_t n);

}  // namespace abx::core
