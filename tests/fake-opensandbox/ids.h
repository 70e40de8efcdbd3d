#pragma once

// Random identifiers in the shapes upstream uses.

#include <string>

namespace fake_opensandbox {

// UUID4 with dashes (sandbox ids, session ids).
std::string NewUuid4();
// UUID4 as 32 lowercase hex digits (X-Request-ID, execd command ids).
std::string NewUuid4Hex();

}  // namespace fake_opensandbox
