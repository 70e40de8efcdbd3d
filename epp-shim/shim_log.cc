#include "epp-shim/shim_log.h"

#include <unistd.h>

#include "common/platform.h"

namespace abx {

void ShimLog(const std::string& text) {
  std::string line = "abx-opensandbox-shim: " + text + "\n";
  WriteAll(STDERR_FILENO, line.data(), line.size());
}

}  // namespace abx
