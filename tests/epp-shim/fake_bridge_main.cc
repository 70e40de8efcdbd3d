// The fake bridge as a program, for tests that let the shim start it.
#include "tests/epp-shim/fake_bridge.h"

int main(int argc, char** argv) { return abx::testing::FakeBridgeMain(argc, argv); }
