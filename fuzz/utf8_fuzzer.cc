// UTF-8 checks (bridge/base/utf8.h) against a reference decoder written from the
// Unicode standard's table of well-formed sequences (Table 3-7). Invariants:
// IsValidUtf8 agrees with it; ToValidUtf8 always gives valid UTF-8 and keeps valid
// text as it is; CompleteUtf8Prefix of any cut of valid text lands on a character
// boundary at most 3 bytes back.

#include <cstdint>
#include <string>
#include <string_view>

#include "bridge/base/utf8.h"
#include "fuzz/check.h"

namespace {

using abx::fuzz::Printable;

// Length of the well-formed sequence at s[i], 0 if there is none (Table 3-7).
size_t ReferenceSequence(std::string_view s, size_t i) {
  auto at = [&](size_t k) { return static_cast<unsigned char>(s[k]); };
  auto in = [&](size_t k, unsigned lo, unsigned hi) {
    return k < s.size() && at(k) >= lo && at(k) <= hi;
  };
  const unsigned b = at(i);
  if (b <= 0x7F) return 1;
  if (b >= 0xC2 && b <= 0xDF) return in(i + 1, 0x80, 0xBF) ? 2 : 0;
  if (b == 0xE0) return in(i + 1, 0xA0, 0xBF) && in(i + 2, 0x80, 0xBF) ? 3 : 0;
  if ((b >= 0xE1 && b <= 0xEC) || b == 0xEE || b == 0xEF) {
    return in(i + 1, 0x80, 0xBF) && in(i + 2, 0x80, 0xBF) ? 3 : 0;
  }
  if (b == 0xED) return in(i + 1, 0x80, 0x9F) && in(i + 2, 0x80, 0xBF) ? 3 : 0;
  if (b == 0xF0) {
    return in(i + 1, 0x90, 0xBF) && in(i + 2, 0x80, 0xBF) && in(i + 3, 0x80, 0xBF) ? 4 : 0;
  }
  if (b >= 0xF1 && b <= 0xF3) {
    return in(i + 1, 0x80, 0xBF) && in(i + 2, 0x80, 0xBF) && in(i + 3, 0x80, 0xBF) ? 4 : 0;
  }
  if (b == 0xF4) {
    return in(i + 1, 0x80, 0x8F) && in(i + 2, 0x80, 0xBF) && in(i + 3, 0x80, 0xBF) ? 4 : 0;
  }
  return 0;
}

bool ReferenceValid(std::string_view s) {
  for (size_t i = 0; i < s.size();) {
    const size_t n = ReferenceSequence(s, i);
    if (n == 0) return false;
    i += n;
  }
  return true;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  const bool valid = abx::IsValidUtf8(text);
  FUZZ_CHECK(valid == ReferenceValid(text), "IsValidUtf8 says %d for [%s]", valid,
             Printable(text).c_str());
  const std::string repaired = abx::ToValidUtf8(text);
  FUZZ_CHECK(ReferenceValid(repaired), "ToValidUtf8 of [%s] is [%s]", Printable(text).c_str(),
             Printable(repaired).c_str());
  if (valid) FUZZ_CHECK(repaired == text, "ToValidUtf8 changed valid text");
  // Cuts of the repaired (valid) text: all of them near its start and its end.
  for (size_t cut = 0; cut <= repaired.size(); ++cut) {
    if (cut == 64 && repaired.size() > 72) cut = repaired.size() - 8;
    const std::string_view piece = std::string_view(repaired).substr(0, cut);
    const size_t keep = abx::CompleteUtf8Prefix(piece);
    FUZZ_CHECK(keep <= cut && cut - keep <= 3 && ReferenceValid(piece.substr(0, keep)) &&
                   (keep == cut || ReferenceSequence(repaired, keep) > cut - keep),
               "CompleteUtf8Prefix of %zu bytes of [%s] keeps %zu", cut,
               Printable(repaired).c_str(), keep);
  }
  return 0;
}
