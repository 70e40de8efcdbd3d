// EPP/1 line framing (common/line_reader.h): the shim's stdin, split wherever the
// fuzzer likes. Invariants: every byte in is a byte of a line or a newline; lines come
// out in order and whole (or, past the limit, as their prefix with their full length);
// no line longer than the limit unless it is marked oversized; Finish leaves the
// splitter empty.

#include <fuzzer/FuzzedDataProvider.h>

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "common/line_reader.h"
#include "fuzz/check.h"

namespace {

using abx::FramedLine;
using abx::fuzz::Printable;

// The lines of `input` by the plain definition: split on '\n'; a last piece without a
// newline is a line when it is not empty.
std::vector<std::string> ReferenceLines(const std::string& input) {
  std::vector<std::string> lines;
  size_t start = 0;
  for (size_t i = 0; i < input.size(); ++i) {
    if (input[i] == '\n') {
      lines.push_back(input.substr(start, i - start));
      start = i + 1;
    }
  }
  if (start < input.size()) lines.push_back(input.substr(start));
  return lines;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  FuzzedDataProvider provider(data, size);
  // Small limits reach the oversized path with small inputs; sometimes the real ones.
  const bool real_limits = provider.ConsumeBool();
  const size_t max_line = real_limits ? abx::kMaxLineBytes
                                      : provider.ConsumeIntegralInRange<size_t>(0, 300);
  const size_t prefix = real_limits ? abx::kOversizedPrefixBytes
                                    : provider.ConsumeIntegralInRange<size_t>(0, 400);
  const std::string input = provider.ConsumeRandomLengthString(1 << 20);

  abx::LineSplitter splitter(max_line, prefix);
  std::vector<FramedLine> lines;
  size_t fed = 0;
  while (fed < input.size()) {
    size_t chunk = provider.remaining_bytes() > 0
                       ? provider.ConsumeIntegralInRange<size_t>(0, input.size() - fed)
                       : input.size() - fed;
    splitter.Feed(input.data() + fed, chunk, &lines);
    fed += chunk;
  }
  splitter.Finish(&lines);

  const std::vector<std::string> expected = ReferenceLines(input);
  FUZZ_CHECK(lines.size() == expected.size(), "%zu lines, expected %zu", lines.size(),
             expected.size());
  const size_t kept_prefix = std::min(prefix, max_line);
  uint64_t bytes = static_cast<uint64_t>(std::count(input.begin(), input.end(), '\n'));
  for (size_t i = 0; i < lines.size(); ++i) {
    const FramedLine& line = lines[i];
    const std::string& want = expected[i];
    bytes += line.length;
    FUZZ_CHECK(line.length == want.size(), "line %zu: length %llu, expected %zu", i,
               static_cast<unsigned long long>(line.length), want.size());
    if (line.oversized) {
      FUZZ_CHECK(want.size() > max_line, "line %zu of %zu bytes marked oversized (limit %zu)",
                 i, want.size(), max_line);
      FUZZ_CHECK(line.data == want.substr(0, kept_prefix), "line %zu: prefix [%s], expected [%s]",
                 i, Printable(line.data).c_str(), Printable(want.substr(0, kept_prefix)).c_str());
    } else {
      FUZZ_CHECK(want.size() <= max_line, "line %zu of %zu bytes not marked oversized (limit %zu)",
                 i, want.size(), max_line);
      FUZZ_CHECK(line.data == want, "line %zu: [%s], expected [%s]", i,
                 Printable(line.data).c_str(), Printable(want).c_str());
    }
  }
  FUZZ_CHECK(bytes == input.size(), "lines and newlines hold %llu bytes, input had %zu",
             static_cast<unsigned long long>(bytes), input.size());

  // After Finish the splitter starts afresh.
  std::vector<FramedLine> again;
  splitter.Feed("x\n", 2, &again);
  splitter.Finish(&again);
  FUZZ_CHECK(again.size() == 1 && again[0].data == (max_line >= 1 ? "x" : "") &&
                 again[0].length == 1,
             "a splitter used once does not split \"x\\n\" as a fresh one");
  return 0;
}
