#pragma once

// The fake's notion of "now": the real clock shifted by --clock-skew, so tests can check
// how a client copes with a server whose clock disagrees with its own. Every time the
// fake shows or acts on (Date header, createdAt, expiresAt, renew checks, expiry, execd
// timestamps) comes from here.
//
// Formats reproduced:
//   * lifecycle (pydantic):  2025-12-22T09:08:05Z or 2025-12-22T09:08:05.123456Z
//   * execd (Go RFC3339Nano): 2025-12-22T09:08:05.123456789Z (trailing zeros trimmed)
//   * HTTP Date:              Mon, 22 Dec 2025 09:08:05 GMT

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>

namespace fake_opensandbox {

using TimePoint = std::chrono::system_clock::time_point;

class ServerClock {
 public:
  explicit ServerClock(int64_t skew_seconds = 0) : skew_(skew_seconds) {}

  TimePoint Now() const { return std::chrono::system_clock::now() + skew_; }
  // Converts a server-clock time to the real clock (for timers that sleep on the real one).
  TimePoint ToReal(TimePoint server_time) const { return server_time - skew_; }
  int64_t NowUnixMillis() const;

 private:
  std::chrono::seconds skew_;
};

// pydantic's UTC datetime: microseconds, fraction omitted when zero.
std::string FormatPydanticTime(TimePoint t);
// Go's time.RFC3339Nano in UTC: up to 9 digits, trailing zeros trimmed.
std::string FormatGoTime(TimePoint t);
// RFC 7231 IMF-fixdate.
std::string FormatHttpDate(TimePoint t);

// Parses an RFC 3339 / ISO 8601 date-time as pydantic does for `datetime` fields:
// `YYYY-MM-DD[T ]HH:MM[:SS[.f{1,9}]][Z|±HH[:]MM]`; no zone means UTC. Also accepts a
// plain number as Unix seconds (pydantic does). nullopt when it can't be read.
std::optional<TimePoint> ParseDateTime(const std::string& text);

}  // namespace fake_opensandbox
