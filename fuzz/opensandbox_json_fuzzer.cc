// What the OpenSandbox server and execd answer, as the bridge decodes it: lifecycle
// bodies (DecodeSandbox, DecodeSandboxPage, DecodeEndpoint), execd bodies
// (DecodeCommandStatus, DecodeFileInfo, DecodeMetrics) and error bodies (FromHttpStatus), from any
// bytes a server, a proxy or whatever listens in a sandbox could send. The first byte
// picks the decoder (5: error bodies, 6: metrics). Invariants: nothing crashes or hangs, however deep or large the
// JSON; a decoded sandbox has an id; an error from an error body becomes one valid
// EPP/1 error line.

#include <fuzzer/FuzzedDataProvider.h>

#include <cstdint>
#include <string>

#include <rapidjson/document.h>

#include "bridge/api/epp/jsonrpc.h"
#include "bridge/base/error_codes.h"
#include "bridge/opensandbox/error_body.h"
#include "bridge/opensandbox/execd_client.h"
#include "bridge/opensandbox/lifecycle_client.h"
#include "fuzz/check.h"
#include "fuzz/hostile_text.h"

namespace {

using abx::fuzz::Printable;
using namespace abx;
using namespace abx::opensandbox;

void CheckRecord(const SandboxRecord& record, const std::string& body) {
  FUZZ_CHECK(!record.id.empty(), "a sandbox without an id from [%s]", Printable(body).c_str());
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  FuzzedDataProvider provider(data, size);
  const int which = provider.ConsumeIntegralInRange<int>(0, 6);
  const int status = provider.ConsumeIntegralInRange<int>(100, 599);
  const std::string request_id = provider.ConsumeRandomLengthString(40);
  const bool expand = provider.ConsumeBool();
  const std::string raw = provider.ConsumeRemainingBytesAsString();
  const std::string body = expand ? abx::fuzz::ExpandRepeats(raw) : raw;

  switch (which) {
    case 0: {
      auto record = DecodeSandbox(body);
      if (record.ok()) CheckRecord(record.value(), body);
      break;
    }
    case 1: {
      auto page = DecodeSandboxPage(body);
      if (page.ok()) {
        for (const SandboxRecord& record : page->items) CheckRecord(record, body);
      }
      break;
    }
    case 2: {
      auto endpoint = DecodeEndpoint(body);
      FUZZ_CHECK(!endpoint.ok() || !endpoint->endpoint.empty(), "an empty endpoint");
      break;
    }
    case 3: {
      (void)DecodeCommandStatus(body);
      break;
    }
    case 4: {
      // As DecodeFileInfoArray and Stat read it: one object, or an array of them.
      rapidjson::Document doc;
      doc.Parse<rapidjson::kParseIterativeFlag>(body.data(), body.size());
      if (doc.HasParseError()) break;
      if (doc.IsArray()) {
        for (auto& item : doc.GetArray()) {
          auto info = DecodeFileInfo(item);
          FUZZ_CHECK(!info.ok() || item.HasMember("path"), "file info without a path");
        }
      } else {
        (void)DecodeFileInfo(doc);
      }
      break;
    }
    case 6: {
      auto metrics = DecodeMetrics(body);
      FUZZ_CHECK(metrics.ok() || metrics.error().code == ErrorCode::kUpstream,
                 "metrics refused with a code other than E8010");
      break;
    }
    default: {
      Error error = FromHttpStatus(status, body, request_id, "fuzz");
      FUZZ_CHECK(JsonRpcCode(error.code) <= -32000 && JsonRpcCode(error.code) >= -32009,
                 "HTTP %d mapped to JSON-RPC code %d", status, JsonRpcCode(error.code));
      FUZZ_CHECK(error.http_status == status, "http_status %d for %d", error.http_status,
                 status);
      // The host reads this line as UTF-8 JSON, whatever bytes the server sent.
      const std::string line = abx::epp::ErrorLine("1", error);
      rapidjson::Document doc;
      doc.Parse<rapidjson::kParseIterativeFlag | rapidjson::kParseValidateEncodingFlag>(
          line.data(), line.size());
      FUZZ_CHECK(!doc.HasParseError() && doc.IsObject(), "error line is not UTF-8 JSON: [%s]",
                 Printable(line).c_str());
      break;
    }
  }
  return 0;
}
