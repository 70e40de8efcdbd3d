// Time stamps from OpenSandbox (bridge/base/time_util.h). Invariants: a stamp that
// parses formats to RFC 3339 UTC that parses back to the same instant (within the
// years RFC 3339 can write); normalising is idempotent; HTTP dates never crash or
// overflow.

#include <cstdint>
#include <string>

#include "bridge/base/time_util.h"
#include "fuzz/check.h"

namespace {
using abx::fuzz::Printable;
// 0000-01-01T00:00:00Z and 9999-12-31T23:59:59.999Z.
constexpr int64_t kFirstMillis = -62167219200000;
constexpr int64_t kLastMillis = 253402300799999;
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  if (auto millis = abx::ParseRfc3339Millis(text)) {
    const std::string formatted = abx::FormatRfc3339Millis(*millis);
    if (*millis >= kFirstMillis && *millis <= kLastMillis) {
      auto again = abx::ParseRfc3339Millis(formatted);
      FUZZ_CHECK(again && *again == *millis, "[%s] is %lld ms, formatted [%s], read back %lld",
                 Printable(text).c_str(), static_cast<long long>(*millis), formatted.c_str(),
                 again ? static_cast<long long>(*again) : -1LL);
      FUZZ_CHECK(formatted.size() >= 20 && formatted.back() == 'Z', "formatted [%s]",
                 formatted.c_str());
    }
  }
  const std::string normalized = abx::NormalizeRfc3339(text);
  FUZZ_CHECK(abx::NormalizeRfc3339(normalized) == normalized,
             "normalising [%s] twice: [%s] then [%s]", Printable(text).c_str(),
             Printable(normalized).c_str(),
             Printable(abx::NormalizeRfc3339(normalized)).c_str());
  (void)abx::ParseHttpDateMillis(text);
  return 0;
}
