#pragma once

// The binaries under test, found through Bazel runfiles (`data` deps of the test).

#include <string>

namespace abx::e2e {

// $TEST_SRCDIR/opensandbox_bridge/<package>/<name> (RUNFILES_DIR, then
// /proc/self/exe.runfiles when TEST_SRCDIR is not set).
std::string Runfile(const std::string& package, const std::string& name);
std::string FakeServerBinary();  // //tests/fake-opensandbox:fake-opensandbox
std::string BridgeBinary();      // //bridge/daemon:abx-opensandbox-bridge
std::string ShimBinary();        // //epp-shim:abx-opensandbox-shim

}  // namespace abx::e2e
