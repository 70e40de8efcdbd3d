#pragma once

#include <string>

namespace abx {

// Writes "abx-opensandbox-shim: <text>\n" to stderr in one write.
void ShimLog(const std::string& text);

// The program named at the start of each line, for another program that uses the
// shim's libraries (the bridge's CLI finds and starts a bridge with bridge_client.h).
// Set once, before any line is written.
void SetShimLogProgram(const char* program);

}  // namespace abx
