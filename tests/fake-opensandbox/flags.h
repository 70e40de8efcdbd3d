#pragma once

// Command line of fake-opensandbox; see HelpText() and README.md.

#include <string>

#include "tests/fake-opensandbox/fake_config.h"

namespace fake_opensandbox {

enum class FlagsResult { kRun, kHelp, kError };

FlagsResult ParseFlags(int argc, char** argv, FakeConfig* config, std::string* error);
std::string HelpText();

}  // namespace fake_opensandbox
