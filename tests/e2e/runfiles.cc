#include "tests/e2e/runfiles.h"

#include <cstdlib>
#include <filesystem>

namespace abx::e2e {
namespace {

constexpr char kWorkspace[] = "opensandbox_bridge";

}  // namespace

std::string Runfile(const std::string& package, const std::string& name) {
  std::string root;
  if (const char* srcdir = std::getenv("TEST_SRCDIR"); srcdir && *srcdir) {
    root = srcdir;
  } else if (const char* runfiles = std::getenv("RUNFILES_DIR"); runfiles && *runfiles) {
    root = runfiles;
  } else {
    std::error_code ec;
    root = std::filesystem::read_symlink("/proc/self/exe", ec).string() + ".runfiles";
  }
  return root + "/" + kWorkspace + "/" + package + "/" + name;
}

std::string FakeServerBinary() { return Runfile("tests/fake-opensandbox", "fake-opensandbox"); }
std::string BridgeBinary() { return Runfile("bridge/daemon", "abx-opensandbox-bridge"); }
std::string ShimBinary() { return Runfile("epp-shim", "abx-opensandbox-shim"); }

}  // namespace abx::e2e
