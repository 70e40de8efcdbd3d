// The shim and the bridge read the same EPP/1 lines independently: the shim
// (epp-shim/line_meta.h) to track which requests await an answer, the bridge
// (bridge/api/epp/jsonrpc.h) to answer them. When the shim tracks a request under an id,
// the bridge's answer must carry that id; otherwise the shim waits for an answer that
// never comes under that id (and answers it a second time, E8002, if the bridge goes
// away). Checked on whole lines (ParseLineMeta vs ParseEnvelope) and on the prefixes of
// oversized lines (ParseLinePrefixMeta vs RecoverId). Also: a line the shim takes for a
// request or a notification is JSON for the bridge. (The shim may track less than the
// bridge answers, e.g. past its depth limit: an answer nobody waits for is harmless.)

#include <fuzzer/FuzzedDataProvider.h>

#include <cstdint>
#include <string>

#include "bridge/api/epp/jsonrpc.h"
#include "epp-shim/line_meta.h"
#include "fuzz/check.h"
#include "fuzz/hostile_text.h"

namespace {

using abx::LineMeta;
using abx::fuzz::Printable;

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  FuzzedDataProvider provider(data, size);
  const uint32_t cut_seed = provider.ConsumeIntegral<uint32_t>();
  const bool expand = provider.ConsumeBool();
  const std::string rest = provider.ConsumeRemainingBytesAsString();
  const std::string line = expand ? abx::fuzz::ExpandRepeats(rest) : rest;

  // Whole lines.
  const LineMeta meta = abx::ParseLineMeta(line);
  std::string answer_id;
  auto envelope = abx::epp::ParseEnvelope(line, &answer_id);
  const bool bridge_says_json =
      envelope.ok() || envelope.error().code != abx::ErrorCode::kParse;
  if (meta.kind == LineMeta::Kind::kRequest) {
    FUZZ_CHECK(meta.id_json == answer_id,
               "the shim tracks [%s] as id [%s]; the bridge answers with id [%s]",
               Printable(line).c_str(), Printable(meta.id_json).c_str(),
               Printable(answer_id).c_str());
  }
  if (meta.kind != LineMeta::Kind::kOther) {
    FUZZ_CHECK(bridge_says_json, "the shim reads [%s] as a %s, the bridge as not JSON",
               Printable(line).c_str(),
               meta.kind == LineMeta::Kind::kRequest ? "request" : "notification");
  }
  // Prefixes of oversized lines.
  const size_t cut = cut_seed % (line.size() + 1);
  const std::string prefix = line.substr(0, cut);
  const LineMeta prefix_meta = abx::ParseLinePrefixMeta(prefix);
  const std::string recovered = abx::epp::RecoverId(prefix);
  if (prefix_meta.kind == LineMeta::Kind::kRequest) {
    FUZZ_CHECK(prefix_meta.id_json == recovered,
               "oversized line starting [%s]: the shim tracks id [%s], the bridge answers "
               "E8008 with id [%s]",
               Printable(prefix).c_str(), Printable(prefix_meta.id_json).c_str(),
               Printable(recovered).c_str());
  }
  if (bridge_says_json && meta.kind == LineMeta::Kind::kRequest &&
      prefix_meta.kind == LineMeta::Kind::kRequest) {
    FUZZ_CHECK(prefix_meta.id_json == meta.id_json,
               "a cut of [%s] at %zu reads as id [%s], the whole line as [%s]",
               Printable(line).c_str(), cut, Printable(prefix_meta.id_json).c_str(),
               Printable(meta.id_json).c_str());
  }
  return 0;
}
