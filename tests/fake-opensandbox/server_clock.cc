#include "tests/fake-opensandbox/server_clock.h"

#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <ctime>

namespace fake_opensandbox {
namespace {

struct Split {
  time_t seconds;
  int64_t nanos;  // 0..999999999
};

Split SplitTime(TimePoint t) {
  auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(t.time_since_epoch()).count();
  int64_t secs = ns / 1000000000;
  int64_t rem = ns % 1000000000;
  if (rem < 0) {
    rem += 1000000000;
    secs -= 1;
  }
  return {static_cast<time_t>(secs), rem};
}

std::string FormatBase(time_t seconds) {
  struct tm tm;
  gmtime_r(&seconds, &tm);
  char buf[32];
  strftime(buf, sizeof(buf), "%Y-%m-%dT%H:%M:%S", &tm);
  return buf;
}

// Days from 1970-01-01 to y-m-d in the proleptic Gregorian calendar (H. Hinnant's algorithm).
int64_t DaysFromCivil(int64_t y, unsigned m, unsigned d) {
  y -= m <= 2;
  const int64_t era = (y >= 0 ? y : y - 399) / 400;
  const unsigned yoe = static_cast<unsigned>(y - era * 400);
  const unsigned doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
  const unsigned doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  return era * 146097 + static_cast<int64_t>(doe) - 719468;
}

bool ReadDigits(const std::string& s, size_t* pos, size_t count, int* out) {
  int value = 0;
  for (size_t i = 0; i < count; ++i) {
    if (*pos >= s.size() || !isdigit(static_cast<unsigned char>(s[*pos]))) return false;
    value = value * 10 + (s[*pos] - '0');
    ++*pos;
  }
  *out = value;
  return true;
}

}  // namespace

int64_t ServerClock::NowUnixMillis() const {
  return std::chrono::duration_cast<std::chrono::milliseconds>(Now().time_since_epoch()).count();
}

std::string FormatPydanticTime(TimePoint t) {
  Split split = SplitTime(t);
  std::string out = FormatBase(split.seconds);
  int64_t micros = split.nanos / 1000;
  if (micros != 0) {
    char frac[32];
    snprintf(frac, sizeof(frac), ".%06lld", static_cast<long long>(micros));
    out += frac;
  }
  out += 'Z';
  return out;
}

std::string FormatGoTime(TimePoint t) {
  Split split = SplitTime(t);
  std::string out = FormatBase(split.seconds);
  if (split.nanos != 0) {
    char frac[32];
    snprintf(frac, sizeof(frac), ".%09lld", static_cast<long long>(split.nanos));
    std::string f = frac;
    while (f.back() == '0') f.pop_back();
    out += f;
  }
  out += 'Z';
  return out;
}

std::string FormatHttpDate(TimePoint t) {
  time_t seconds = SplitTime(t).seconds;
  struct tm tm;
  gmtime_r(&seconds, &tm);
  static const char* kDays[] = {"Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"};
  static const char* kMonths[] = {"Jan", "Feb", "Mar", "Apr", "May", "Jun",
                                  "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"};
  char buf[64];
  snprintf(buf, sizeof(buf), "%s, %02d %s %04d %02d:%02d:%02d GMT", kDays[tm.tm_wday],
           tm.tm_mday, kMonths[tm.tm_mon], tm.tm_year + 1900, tm.tm_hour, tm.tm_min, tm.tm_sec);
  return buf;
}

std::optional<TimePoint> ParseDateTime(const std::string& text) {
  // A bare number: Unix seconds (pydantic also reads milliseconds when it is huge).
  if (!text.empty()) {
    char* end = nullptr;
    double number = strtod(text.c_str(), &end);
    if (end && *end == '\0' && (isdigit(static_cast<unsigned char>(text[0])) || text[0] == '-')) {
      if (number > 2e10 || number < -2e10) number /= 1000.0;
      if (number > 9e9) number = 9e9;
      if (number < -9e9) number = -9e9;
      return TimePoint(std::chrono::duration_cast<TimePoint::duration>(
          std::chrono::duration<double>(number)));
    }
  }
  size_t pos = 0;
  int year, month, day, hour, minute, second = 0;
  if (!ReadDigits(text, &pos, 4, &year)) return std::nullopt;
  if (pos >= text.size() || text[pos++] != '-') return std::nullopt;
  if (!ReadDigits(text, &pos, 2, &month)) return std::nullopt;
  if (pos >= text.size() || text[pos++] != '-') return std::nullopt;
  if (!ReadDigits(text, &pos, 2, &day)) return std::nullopt;
  if (pos >= text.size() || (text[pos] != 'T' && text[pos] != 't' && text[pos] != ' ')) {
    return std::nullopt;
  }
  ++pos;
  if (!ReadDigits(text, &pos, 2, &hour)) return std::nullopt;
  if (pos >= text.size() || text[pos++] != ':') return std::nullopt;
  if (!ReadDigits(text, &pos, 2, &minute)) return std::nullopt;
  int64_t nanos = 0;
  if (pos < text.size() && text[pos] == ':') {
    ++pos;
    if (!ReadDigits(text, &pos, 2, &second)) return std::nullopt;
    if (pos < text.size() && (text[pos] == '.' || text[pos] == ',')) {
      ++pos;
      int digits = 0;
      while (pos < text.size() && isdigit(static_cast<unsigned char>(text[pos]))) {
        if (digits < 9) nanos = nanos * 10 + (text[pos] - '0');
        ++digits;
        ++pos;
      }
      if (digits == 0) return std::nullopt;
      for (int i = digits; i < 9; ++i) nanos *= 10;
    }
  }
  int64_t offset_seconds = 0;
  if (pos < text.size()) {
    char zone = text[pos];
    if (zone == 'Z' || zone == 'z') {
      ++pos;
    } else if (zone == '+' || zone == '-') {
      ++pos;
      int oh, om = 0;
      if (!ReadDigits(text, &pos, 2, &oh)) return std::nullopt;
      if (pos < text.size() && text[pos] == ':') ++pos;
      if (pos < text.size() && !ReadDigits(text, &pos, 2, &om)) return std::nullopt;
      offset_seconds = (oh * 3600 + om * 60) * (zone == '+' ? 1 : -1);
    } else {
      return std::nullopt;
    }
  }
  if (pos != text.size()) return std::nullopt;
  if (month < 1 || month > 12 || day < 1 || day > 31 || hour > 23 || minute > 59 ||
      second > 59) {
    return std::nullopt;
  }
  int64_t days = DaysFromCivil(year, static_cast<unsigned>(month), static_cast<unsigned>(day));
  int64_t secs = days * 86400 + hour * 3600 + minute * 60 + second - offset_seconds;
  // system_clock counts nanoseconds in 64 bits (up to year 2262): clamp far dates.
  constexpr int64_t kMaxSeconds = 9000000000;  // year 2255
  if (secs > kMaxSeconds) secs = kMaxSeconds;
  if (secs < -kMaxSeconds) secs = -kMaxSeconds;
  return TimePoint(std::chrono::duration_cast<TimePoint::duration>(
      std::chrono::seconds(secs) + std::chrono::nanoseconds(nanos)));
}

}  // namespace fake_opensandbox
