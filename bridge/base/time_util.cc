#include "bridge/base/time_util.h"

#include <chrono>
#include <cstdio>
#include <cstring>
#include <ctime>

namespace abx {
namespace {

// Days from 1970-01-01 to y-m-d (proleptic Gregorian), no time zone involved.
int64_t DaysFromCivil(int64_t y, unsigned m, unsigned d) {
  y -= m <= 2;
  const int64_t era = (y >= 0 ? y : y - 399) / 400;
  const unsigned yoe = static_cast<unsigned>(y - era * 400);
  const unsigned doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
  const unsigned doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  return era * 146097 + static_cast<int64_t>(doe) - 719468;
}

bool Digits(const std::string& s, size_t at, size_t n, int* out) {
  if (at + n > s.size()) return false;
  int v = 0;
  for (size_t i = at; i < at + n; ++i) {
    if (s[i] < '0' || s[i] > '9') return false;
    v = v * 10 + (s[i] - '0');
  }
  *out = v;
  return true;
}

}  // namespace

int64_t NowMillis() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

std::optional<int64_t> ParseRfc3339Millis(const std::string& s) {
  int y, mo, d, h, mi, se;
  if (!Digits(s, 0, 4, &y) || s.size() < 19 || s[4] != '-' || !Digits(s, 5, 2, &mo) ||
      s[7] != '-' || !Digits(s, 8, 2, &d) || (s[10] != 'T' && s[10] != 't' && s[10] != ' ') ||
      !Digits(s, 11, 2, &h) || s[13] != ':' || !Digits(s, 14, 2, &mi) || s[16] != ':' ||
      !Digits(s, 17, 2, &se)) {
    return std::nullopt;
  }
  if (mo < 1 || mo > 12 || d < 1 || d > 31 || h > 23 || mi > 59 || se > 60) return std::nullopt;
  size_t at = 19;
  int64_t millis = 0;
  if (at < s.size() && s[at] == '.') {
    ++at;
    int digits = 0;
    while (at < s.size() && s[at] >= '0' && s[at] <= '9') {
      if (digits < 3) millis = millis * 10 + (s[at] - '0');
      ++digits;
      ++at;
    }
    if (digits == 0 || digits > 9) return std::nullopt;
    for (int i = digits; i < 3; ++i) millis *= 10;
  }
  int64_t offset_s = 0;
  if (at < s.size() && (s[at] == 'Z' || s[at] == 'z')) {
    ++at;
  } else if (at < s.size() && (s[at] == '+' || s[at] == '-')) {
    int oh, om;
    if (!Digits(s, at + 1, 2, &oh) || at + 3 >= s.size() || s[at + 3] != ':' ||
        !Digits(s, at + 4, 2, &om)) {
      return std::nullopt;
    }
    offset_s = (oh * 3600 + om * 60) * (s[at] == '+' ? 1 : -1);
    at += 6;
  } else if (at == s.size()) {
    // No zone: OpenSandbox takes it as UTC.
  } else {
    return std::nullopt;
  }
  if (at != s.size()) return std::nullopt;
  const int64_t seconds = DaysFromCivil(y, mo, d) * 86400 + h * 3600 + mi * 60 + se - offset_s;
  return seconds * 1000 + millis;
}

std::string FormatRfc3339Millis(int64_t millis) {
  const time_t seconds = static_cast<time_t>(millis >= 0 ? millis / 1000 : (millis - 999) / 1000);
  const int ms = static_cast<int>(millis - static_cast<int64_t>(seconds) * 1000);
  tm utc;
  gmtime_r(&seconds, &utc);
  char out[40];
  if (ms) {
    std::snprintf(out, sizeof out, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", utc.tm_year + 1900,
                  utc.tm_mon + 1, utc.tm_mday, utc.tm_hour, utc.tm_min, utc.tm_sec, ms);
  } else {
    std::snprintf(out, sizeof out, "%04d-%02d-%02dT%02d:%02d:%02dZ", utc.tm_year + 1900,
                  utc.tm_mon + 1, utc.tm_mday, utc.tm_hour, utc.tm_min, utc.tm_sec);
  }
  return out;
}

std::string NormalizeRfc3339(const std::string& text) {
  auto millis = ParseRfc3339Millis(text);
  return millis ? FormatRfc3339Millis(*millis) : text;
}

std::optional<int64_t> ParseHttpDateMillis(const std::string& text) {
  static const char* kMonths[] = {"Jan", "Feb", "Mar", "Apr", "May", "Jun",
                                  "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"};
  char month[4] = {0};
  int d, y, h, mi, se;
  if (std::sscanf(text.c_str(), "%*3s, %2d %3s %4d %2d:%2d:%2d GMT", &d, month, &y, &h, &mi,
                  &se) != 6) {
    return std::nullopt;
  }
  for (unsigned m = 0; m < 12; ++m) {
    if (std::strcmp(month, kMonths[m]) == 0) {
      return (DaysFromCivil(y, m + 1, d) * 86400 + h * 3600 + mi * 60 + se) * 1000;
    }
  }
  return std::nullopt;
}

}  // namespace abx
