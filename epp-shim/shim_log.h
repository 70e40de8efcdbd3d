#pragma once

#include <string>

namespace abx {

// Writes "abx-opensandbox-shim: <text>\n" to stderr in one write.
void ShimLog(const std::string& text);

}  // namespace abx
