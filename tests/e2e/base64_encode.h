#pragma once

// Standard base64 (RFC 4648, padded) for what the tests send as `base64` file data or
// search for as an encoded secret. Written here rather than taken from the bridge
// (bridge/base/base64), so a fault in the bridge's codec cannot hide itself in a test's
// expectation.

#include <string>

namespace abx::e2e {

std::string Base64(const std::string& bytes);
// Decodes it back; characters outside the alphabet (padding) are skipped.
std::string Unbase64(const std::string& text);

}  // namespace abx::e2e
