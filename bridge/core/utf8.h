#pragma once
// UTF-8 checks for text that must travel as JSON strings.

#include <string>
#include <string_view>

namespace abx::core {

bool IsValidUtf8(std::string_view text);
// Length of `text` without a multi-byte sequence cut short at its very end (a chunk
// boundary inside a character); the whole length when it ends cleanly.
size_t CompleteUtf8Prefix(std::string_view text);
// Invalid sequences become U+FFFD, as Go's encoding/json (execd) does it.
std::string ToValidUtf8(std::string_view text);

}  // namespace abx::core
