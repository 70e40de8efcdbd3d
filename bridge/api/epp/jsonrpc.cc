#include "bridge/api/epp/jsonrpc.h"

#include <cmath>
#include <cstdio>
#include <vector>

#include <rapidjson/error/en.h>
#include <rapidjson/reader.h>

#include "bridge/api/epp/json_tape.h"
#include "bridge/base/error_codes.h"
#include "bridge/base/utf8.h"
#include "common/json_text.h"
#include "common/line_id.h"

namespace abx::epp {
namespace {

// Lines are parsed iteratively: 8 MiB of '[' must not exhaust the stack (json_tape.h; a
// cut line's id is read by common/line_id.h). Not at full precision, though it would echo
// long fractional ids exactly: RapidJSON 1.1's full-precision reader turns `0e308` into
// -6e-269 (docs/RELIABILITY.md).

// A whole line is parsed in place (json_tape.h): strings are unescaped inside the line's
// own buffer and the document points into it, so a files.write chunk (megabytes of
// base64) is scanned 16 bytes at a time and never copied into the document. The bytes no
// JSON text may hold (invalid UTF-8, raw control characters, NUL among them) are looked
// for on the whole line first (common/json_text.h) instead of byte by byte inside the
// parser; the shim checks lines the same way, so both agree on what is JSON.

// The line and the document that points into it, freed together.
struct ParsedLine {
  explicit ParsedLine(std::string text) : text(std::move(text)) {}
  std::string text;
  rapidjson::Document doc;
};

// Builds a document from a tape (rapidjson::Document::Populate), with strings that
// reference the parsed line rather than copies of them.
class TapeReplay {
 public:
  explicit TapeReplay(const std::vector<JsonToken>& tokens) : tokens_(tokens) {}
  bool operator()(rapidjson::Document& doc) const {
    using Kind = JsonToken::Kind;
    for (const JsonToken& t : tokens_) {
      switch (t.kind) {
        case Kind::kNull: doc.Null(); break;
        case Kind::kFalse: doc.Bool(false); break;
        case Kind::kTrue: doc.Bool(true); break;
        case Kind::kInt: doc.Int(static_cast<int>(t.i)); break;
        case Kind::kUint: doc.Uint(static_cast<unsigned>(t.u)); break;
        case Kind::kInt64: doc.Int64(t.i); break;
        case Kind::kUint64: doc.Uint64(t.u); break;
        case Kind::kDouble: doc.Double(t.d); break;
        case Kind::kString: doc.String(t.text, t.size, /*copy=*/false); break;
        case Kind::kKey: doc.Key(t.text, t.size, /*copy=*/false); break;
        case Kind::kStartObject: doc.StartObject(); break;
        case Kind::kEndObject: doc.EndObject(t.size); break;
        case Kind::kStartArray: doc.StartArray(); break;
        case Kind::kEndArray: doc.EndArray(t.size); break;
      }
    }
    return !tokens_.empty();
  }

 private:
  const std::vector<JsonToken>& tokens_;
};

}  // namespace

Result<Envelope> ParseEnvelope(std::string line, std::string* id_json) {
  *id_json = "null";
  // Among them a NUL: RapidJSON reads it as the end of the text, so `{…}\0garbage` would
  // otherwise parse as its prefix.
  if (const size_t bad = FirstNonJsonByte(line); bad != line.size()) {
    const unsigned char c = static_cast<unsigned char>(line[bad]);
    char what[64];
    std::snprintf(what, sizeof what, c < 0x20 ? "a raw control character 0x%02X" : "invalid UTF-8 (0x%02X)", c);
    return MakeError(ErrorCode::kParse,
                           std::string("parse error: ") + what + " at byte " + std::to_string(bad));
  }
  auto parsed = std::make_shared<ParsedLine>(std::move(line));
  std::vector<JsonToken> tokens;
  const JsonTapeError tape_error = TokenizeInPlace(parsed->text.data(), &tokens);
  if (tape_error.code != 0) {
    return MakeError(
        ErrorCode::kParse,
        std::string("parse error: ") +
            rapidjson::GetParseError_En(static_cast<rapidjson::ParseErrorCode>(tape_error.code)) +
            " at byte " + std::to_string(tape_error.offset));
  }
  rapidjson::Document& doc = parsed->doc;
  TapeReplay replay(tokens);
  doc.Populate(replay);
  if (!doc.IsObject()) {
    return MakeError(ErrorCode::kInvalidRequest,
                           "invalid request: a message must be a JSON object");
  }
  Envelope env;
  auto id = doc.FindMember("id");
  if (id != doc.MemberEnd()) {
    // RapidJSON reads some too-large numbers (12.2e308) as infinity, which no JSON can
    // carry back in the answer: such an id is as unusable as an object.
    const bool finite = !id->value.IsDouble() || std::isfinite(id->value.GetDouble());
    if (!(id->value.IsString() || id->value.IsNumber() || id->value.IsNull()) || !finite) {
      return MakeError(ErrorCode::kInvalidRequest,
                             "invalid request: id must be a string, a number or null");
    }
    env.has_id = true;
    env.id_json = ToJson(id->value);
    *id_json = env.id_json;
  }
  auto version = doc.FindMember("jsonrpc");
  if (version == doc.MemberEnd() || !version->value.IsString() ||
      std::string_view(version->value.GetString(), version->value.GetStringLength()) != "2.0") {
    return MakeError(ErrorCode::kInvalidRequest,
                           "invalid request: jsonrpc must be \"2.0\"");
  }
  auto method = doc.FindMember("method");
  if (method == doc.MemberEnd() || !method->value.IsString()) {
    return MakeError(ErrorCode::kInvalidRequest,
                           "invalid request: method must be a string");
  }
  env.method.assign(method->value.GetString(), method->value.GetStringLength());
  auto params = doc.FindMember("params");
  if (params != doc.MemberEnd()) {
    if (!params->value.IsObject() && !params->value.IsArray()) {
      return MakeError(ErrorCode::kInvalidRequest,
                             "invalid request: params must be an object or an array");
    }
    env.params = &params->value;
  }
  // The document's pointer keeps the line alive with it.
  env.doc = std::shared_ptr<rapidjson::Document>(parsed, &parsed->doc);
  return env;
}

std::string RecoverId(std::string_view prefix) {
  std::string id_json;
  return ReadCutLineId(prefix, &id_json) ? id_json : "null";
}

std::string ResponseLine(const std::string& id_json, std::string_view result_json) {
  std::string line = ResponseStart(id_json, result_json.size());
  line.append(result_json);
  ResponseEnd(&line);
  return line;
}

std::string ResponseStart(const std::string& id_json, size_t result_size_hint) {
  std::string line;
  line.reserve(result_size_hint + id_json.size() + 40);
  line.append("{\"jsonrpc\":\"2.0\",\"id\":").append(id_json).append(",\"result\":");
  return line;
}

void ResponseEnd(std::string* line) { line->push_back('}'); }

std::string ErrorLine(const std::string& id_json, const Error& error) {
  std::string data = "{";
  const std::string_view epp = EppCodeName(error.code);
  auto add = [&](const std::string& member) {
    if (data.size() > 1) data += ",";
    data += member;
  };
  if (!epp.empty()) add("\"epp_code\":\"" + std::string(epp) + "\"");
  if (error.http_status) add("\"http_status\":" + std::to_string(error.http_status));
  // Messages, request ids and fields may carry bytes a server sent; the host reads UTF-8.
  if (!error.request_id.empty()) {
    add("\"request_id\":" + Quote(ToValidUtf8(error.request_id)));
  }
  if (error.retryable) add("\"retryable\":true");
  if (!error.field.empty()) add("\"field\":" + Quote(ToValidUtf8(error.field)));
  if (!error.errno_name.empty()) add("\"errno\":" + Quote(ToValidUtf8(error.errno_name)));
  if (!error.extra_data_json.empty()) add(error.extra_data_json);
  data += "}";
  std::string line = "{\"jsonrpc\":\"2.0\",\"id\":" + id_json + ",\"error\":{\"code\":" +
                     std::to_string(JsonRpcCode(error.code)) +
                     ",\"message\":" + Quote(ToValidUtf8(error.message));
  if (data.size() > 2) line += ",\"data\":" + data;
  line += "}}";
  return line;
}

std::string NotificationLine(std::string_view method, std::string_view params_json) {
  std::string line = NotificationStart(method, params_json.size());
  line.append(params_json);
  NotificationEnd(&line);
  return line;
}

std::string NotificationStart(std::string_view method, size_t params_size_hint) {
  std::string line;
  line.reserve(params_size_hint + method.size() + 40);
  line.append("{\"jsonrpc\":\"2.0\",\"method\":\"").append(method).append("\",\"params\":");
  return line;
}

void NotificationEnd(std::string* line) { line->push_back('}'); }

}  // namespace abx::epp
