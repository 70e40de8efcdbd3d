#include "epp-shim/shim_log.h"

#include <unistd.h>

#include "common/platform.h"

namespace abx {
namespace {

const char* program_name = "abx-opensandbox-shim";

}  // namespace

void SetShimLogProgram(const char* program) { program_name = program; }

void ShimLog(const std::string& text) {
  std::string line = std::string(program_name) + ": " + text + "\n";
  WriteAll(STDERR_FILENO, line.data(), line.size());
}

}  // namespace abx
