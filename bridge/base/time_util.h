#pragma once
// Time stamps as OpenSandbox writes them (RFC 3339 with 0–9 fractional digits, `Z` or an
// offset; HTTP `Date`) and as EPP/1 wants them (RFC 3339 UTC).

#include <cstdint>
#include <optional>
#include <string>

namespace abx {

// Milliseconds since the epoch; nullopt when the text is not RFC 3339.
std::optional<int64_t> ParseRfc3339Millis(const std::string& text);
// "2026-12-02T12:00:00.123Z" (milliseconds kept when not zero).
std::string FormatRfc3339Millis(int64_t millis);
// Normalises an upstream stamp to UTC RFC 3339; returns the input when unparsable.
std::string NormalizeRfc3339(const std::string& text);
// An HTTP-date (IMF-fixdate, e.g. "Wed, 02 Dec 2026 12:00:00 GMT") in epoch ms.
std::optional<int64_t> ParseHttpDateMillis(const std::string& text);
int64_t NowMillis();

}  // namespace abx
