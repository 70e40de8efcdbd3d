#pragma once
// UTF-8 for text that must travel as JSON strings; the check itself is common/'s
// (shared with the shim).

#include <string>
#include <string_view>

#include "common/utf8_check.h"

namespace abx {

// Length of `text` without a multi-byte sequence cut short at its very end (a chunk
// boundary inside a character); the whole length when it ends cleanly.
size_t CompleteUtf8Prefix(std::string_view text);
// Invalid sequences become U+FFFD, as Go's encoding/json (execd) does it.
std::string ToValidUtf8(std::string_view text);

}  // namespace abx
