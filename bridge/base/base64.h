#pragma once
// Standard base64 (RFC 4648, with padding) for files.read/files.write `encoding: base64`.

#include <optional>
#include <string>
#include <string_view>

namespace abx {

std::string Base64Encode(std::string_view bytes);
// The same, appended to `out` (files.read builds its answer line in place).
void AppendBase64(std::string_view bytes, std::string* out);
// nullopt on any character outside the alphabet or a bad length/padding; ASCII
// whitespace is skipped, as MIME line breaks are common in hand-made input.
std::optional<std::string> Base64Decode(std::string_view text);
// Decodes the longest run of whole groups of four alphabet characters at the start of
// `text` (no padding, no whitespace) into `out`, which has room for text.size() / 4 * 3
// bytes; returns the characters used, a multiple of 4. For text that arrives in pieces.
size_t Base64DecodeGroups(std::string_view text, char* out);
// A character of the base64 alphabet (padding '=' is not).
bool IsBase64Character(char c);

}  // namespace abx
