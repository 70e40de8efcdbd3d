#pragma once
// JSON text at the level of bytes, shared by the shim and the bridge.
//
// Both read EPP/1 lines with RapidJSON and must agree on which lines are JSON at all and
// on how an id is written back. RapidJSON 1.1's SSE2 string scans (which the shim and the
// bridge's stream parser use for speed) take bytes 0x1A-0x1F for ordinary text: its
// reader accepts them raw inside a string (depending on where the 16-byte blocks fall)
// and its writer does not escape them. So a line is first checked here for the bytes no
// JSON text may hold, and strings are written with AppendJsonQuoted, never with an SSE2
// RapidJSON writer.

#include <cstddef>
#include <string>
#include <string_view>

namespace abx {

// Offset of the first byte that no JSON text may hold anywhere: one that is not part of
// well-formed UTF-8, or a control character other than tab, LF and CR (those three may
// only be whitespace between tokens; no control character may appear raw in a string).
// text.size() when there is none. Fast on ASCII: 16 bytes per step.
size_t FirstNonJsonByte(std::string_view text);

// Appends `text` as a JSON string, escaped exactly as RapidJSON's plain Writer escapes it
// (\b \t \n \f \r \" \\ and \u00XX for other control characters; everything else, UTF-8
// included, as it is), so the two always produce the same bytes.
void AppendJsonQuoted(std::string* out, std::string_view text);

}  // namespace abx
