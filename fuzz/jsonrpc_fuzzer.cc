// EPP/1 envelopes (bridge/api/epp/jsonrpc.h) on arbitrary lines. Invariants: a line is
// answered -32700 (not JSON) or -32600 (not a request) or accepted, never anything else;
// the id an answer carries is JSON null, a number or a string; every ErrorLine is one
// valid JSON-RPC error object; RecoverId on any prefix of a JSON line gives that line's
// id or null, never a different id.

#include <fuzzer/FuzzedDataProvider.h>

#include <cstdint>
#include <string>
#include <string_view>

#include <rapidjson/document.h>
#include <rapidjson/memorystream.h>

#include "bridge/api/epp/jsonrpc.h"
#include "bridge/base/error_codes.h"
#include "fuzz/check.h"
#include "fuzz/hostile_text.h"

namespace {

using abx::ErrorCode;
using abx::fuzz::Printable;

// Whole text, UTF-8 checked. (Numbers as the bridge reads them: RapidJSON's default
// reading is inexact in the last bits, its full-precision one is worse, see
// docs/RELIABILITY.md; so ids are compared as text.)
constexpr unsigned kStrict =
    rapidjson::kParseIterativeFlag | rapidjson::kParseValidateEncodingFlag;

// True when `text` is one JSON value (whole text, UTF-8 checked), parsed into `doc`.
// Read from a plain MemoryStream: Document::Parse(text, length) would wrap it in an
// EncodedInputStream, which drops a leading 0xEF, 0xBB and 0xBF each on its own (a
// byte-order mark, or any piece of one), so "\xEF77" would count as the JSON 77. The
// shim and the bridge take no byte-order mark: EPP/1 lines are JSON text, which RFC 8259
// says a sender must not prefix with one, and a lone 0xEF is not UTF-8.
bool ParseStrict(std::string_view text, rapidjson::Document* doc) {
  if (text.find('\0') != std::string_view::npos) return false;  // NUL is never JSON text
  rapidjson::MemoryStream stream(text.data(), text.size());
  doc->ParseStream<kStrict, rapidjson::UTF8<>>(stream);
  return !doc->HasParseError();
}

void CheckIdJson(const std::string& id_json, const char* what) {
  rapidjson::Document id;
  FUZZ_CHECK(ParseStrict(id_json, &id), "%s: id [%s] is not JSON", what,
             Printable(id_json).c_str());
  FUZZ_CHECK(id.IsNull() || id.IsNumber() || id.IsString(), "%s: id [%s] is not a scalar",
             what, Printable(id_json).c_str());
}

void CheckErrorLine(const std::string& id_json, const abx::Error& error) {
  const std::string line = abx::epp::ErrorLine(id_json, error);
  rapidjson::Document doc;
  // Messages and request ids may hold any byte a server sent; the line is UTF-8 JSON.
  FUZZ_CHECK(ParseStrict(line, &doc), "ErrorLine is not UTF-8 JSON: [%s]",
             Printable(line).c_str());
  FUZZ_CHECK(line.find('\n') == std::string::npos, "ErrorLine holds a newline: [%s]",
             Printable(line).c_str());
  FUZZ_CHECK(doc.IsObject() && doc.HasMember("jsonrpc") && doc["jsonrpc"] == "2.0",
             "ErrorLine without jsonrpc 2.0: [%s]", Printable(line).c_str());
  const std::string head = "{\"jsonrpc\":\"2.0\",\"id\":" + id_json + ",";
  FUZZ_CHECK(doc.HasMember("id") && line.compare(0, head.size(), head) == 0,
             "ErrorLine id differs from [%s]: [%s]", Printable(id_json).c_str(),
             Printable(line).c_str());
  FUZZ_CHECK(doc.HasMember("error") && doc["error"].IsObject() &&
                 doc["error"].HasMember("code") && doc["error"]["code"].IsInt() &&
                 doc["error"]["code"].GetInt() == abx::JsonRpcCode(error.code) &&
                 doc["error"].HasMember("message") && doc["error"]["message"].IsString(),
             "ErrorLine error member malformed: [%s]", Printable(line).c_str());
  const bool has_epp = !abx::EppCodeName(error.code).empty();
  const auto& e = doc["error"];
  FUZZ_CHECK(!has_epp || (e.HasMember("data") && e["data"].IsObject() &&
                          e["data"].HasMember("epp_code") &&
                          e["data"]["epp_code"] == abx::EppCodeName(error.code).data()),
             "ErrorLine lacks data.epp_code: [%s]", Printable(line).c_str());
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  FuzzedDataProvider provider(data, size);
  const size_t cut_seed = provider.ConsumeIntegral<uint32_t>();
  const bool expand = provider.ConsumeBool();
  std::string rest = provider.ConsumeRemainingBytesAsString();
  const std::string line = expand ? abx::fuzz::ExpandRepeats(rest) : rest;

  std::string id_json;
  auto parsed = abx::epp::ParseEnvelope(line, &id_json);
  CheckIdJson(id_json, "ParseEnvelope");
  rapidjson::Document reference;
  const bool is_json = ParseStrict(line, &reference);
  if (parsed.ok()) {
    FUZZ_CHECK(is_json, "accepted a line that is not JSON text: [%s]", Printable(line).c_str());
    const abx::epp::Envelope& env = parsed.value();
    FUZZ_CHECK(env.doc != nullptr, "an accepted envelope owns no document");
    FUZZ_CHECK(env.has_id ? env.id_json == id_json : id_json == "null",
               "envelope id [%s] and answer id [%s] differ", Printable(env.id_json).c_str(),
               Printable(id_json).c_str());
    FUZZ_CHECK(reference.IsObject() && reference["method"].IsString() &&
                   env.method == std::string(reference["method"].GetString(),
                                             reference["method"].GetStringLength()),
               "method [%s] is not the line's", Printable(env.method).c_str());
    FUZZ_CHECK(env.params == nullptr || env.params->IsObject() || env.params->IsArray(),
               "params neither object nor array");
  } else {
    const ErrorCode code = parsed.error().code;
    FUZZ_CHECK(code == (is_json ? ErrorCode::kInvalidRequest : ErrorCode::kParse),
               "line [%s] (%s JSON) refused with code %d", Printable(line).c_str(),
               is_json ? "is" : "not", abx::JsonRpcCode(code));
    FUZZ_CHECK(is_json || id_json == "null", "unparsable line answered with id [%s]",
               Printable(id_json).c_str());
    CheckErrorLine(id_json, parsed.error());
  }

  // The bridge answers an oversized line by the id at its start: any cut of a JSON line
  // must give that line's id or null.
  const size_t cut = line.empty() ? 0 : cut_seed % (line.size() + 1);
  const std::string recovered = abx::epp::RecoverId(std::string_view(line).substr(0, cut));
  CheckIdJson(recovered, "RecoverId");
  if (is_json) {
    FUZZ_CHECK(recovered == "null" || recovered == id_json,
               "RecoverId of the first %zu bytes of [%s] gave [%s], the line's id is [%s]", cut,
               Printable(line).c_str(), Printable(recovered).c_str(), Printable(id_json).c_str());
  }

  // Any error, with whatever bytes a server put in its message or request id.
  abx::Error error;
  error.code = static_cast<ErrorCode>(cut_seed % (static_cast<int>(ErrorCode::kInvalidParams) + 1));
  error.message = line.substr(0, 200);
  error.request_id = line.size() > 200 ? line.substr(200, 50) : "";
  error.field = line.size() > 250 ? line.substr(250, 20) : "";
  error.http_status = static_cast<int>(cut_seed >> 16);
  error.retryable = cut_seed & 1;
  CheckErrorLine(id_json, error);
  return 0;
}
