#pragma once
// Standard base64 (RFC 4648, with padding) for files.read/files.write `encoding: base64`.

#include <optional>
#include <string>
#include <string_view>

namespace abx::core {

std::string Base64Encode(std::string_view bytes);
// The same, appended to `out` (files.read builds its answer line in place).
void AppendBase64(std::string_view bytes, std::string* out);
// nullopt on any character outside the alphabet or a bad length/padding; ASCII
// whitespace is skipped, as MIME line breaks are common in hand-made input.
std::optional<std::string> Base64Decode(std::string_view text);

}  // namespace abx::core
