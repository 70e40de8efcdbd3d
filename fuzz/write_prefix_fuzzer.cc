// The first bytes of a files.write line, read before the rest arrives
// (bridge/api/epp/write_prefix.h): the host's bytes, read by the bridge while the shim still
// forwards the line. Invariants: the reading ends at the opening quote of `data`; what
// follows it never matters (the prefix up to there reads the same); any shorter cut reads
// as nothing.

#include <cstdint>
#include <string>
#include <string_view>

#include "bridge/api/epp/write_prefix.h"
#include "fuzz/check.h"
#include "fuzz/hostile_text.h"

namespace {

bool Same(const abx::epp::WritePrefix& a, const abx::epp::WritePrefix& b) {
  return a.sandbox_id == b.sandbox_id && a.path == b.path && a.mode == b.mode &&
         a.encoding == b.encoding && a.append == b.append && a.data_begin == b.data_begin;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string line =
      abx::fuzz::ExpandRepeats(std::string_view(reinterpret_cast<const char*>(data), size));
  const auto prefix = abx::epp::ReadWritePrefix(line);
  if (!prefix) return 0;
  const size_t begin = prefix->data_begin;
  FUZZ_CHECK(begin >= 1 && begin <= line.size() && line[begin - 1] == '"',
             "data begins at %zu of %zu, not after a quote", begin, line.size());
  const auto up_to_data = abx::epp::ReadWritePrefix(std::string_view(line).substr(0, begin));
  FUZZ_CHECK(up_to_data && Same(*up_to_data, *prefix),
             "the bytes after data's quote changed the reading");
  for (size_t cut : {begin - 1, begin / 2, size_t{0}}) {
    FUZZ_CHECK(!abx::epp::ReadWritePrefix(std::string_view(line).substr(0, cut)),
               "a cut at %zu, before data begins at %zu, was read", cut, begin);
  }
  return 0;
}
