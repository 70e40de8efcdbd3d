#pragma once
// Standard base64 (RFC 4648, with padding), as EPP's `encoding: "base64"` uses it.

#include <optional>
#include <string>
#include <string_view>

namespace abx::bench {

std::string Base64Encode(std::string_view bytes);
std::optional<std::string> Base64Decode(std::string_view text);

}  // namespace abx::bench
