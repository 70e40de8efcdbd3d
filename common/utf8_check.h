#pragma once
// Whether bytes are well-formed UTF-8 (Unicode Table 3-7: no overlong forms, no
// surrogates, nothing above U+10FFFF), fast on ASCII.
//
// Shared by the shim and the bridge, which must agree on which EPP/1 lines are JSON at
// all: both check a whole line with this before parsing it without the parser's own
// per-byte validation. A 4 MiB files.write chunk is 5.6 MB of base64, all ASCII, which
// this passes 16 bytes at a time instead of decoding character by character.

#include <string_view>

namespace abx {

bool IsValidUtf8(std::string_view text);

// Offset of the first byte that does not start a valid sequence; text.size() when the
// whole text is valid.
size_t FirstInvalidUtf8(std::string_view text);

// Length of the well-formed sequence that starts at text[i] (1 for ASCII), or 0 when
// none does there.
size_t Utf8SequenceLength(std::string_view text, size_t i);

}  // namespace abx
