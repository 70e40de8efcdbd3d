#include "bridge/epp/jsonrpc.h"

#include <cctype>

#include <rapidjson/error/en.h>
#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

#include "bridge/core/error_mapping.h"
#include "bridge/core/utf8.h"

namespace abx::epp {
namespace {

// Iterative parsing: a line of 8 MiB of '[' must not exhaust the stack.
constexpr unsigned kParseFlags =
    rapidjson::kParseIterativeFlag | rapidjson::kParseValidateEncodingFlag;

}  // namespace

core::Result<Envelope> ParseEnvelope(std::string_view line, std::string* id_json) {
  *id_json = "null";
  // RapidJSON reads a NUL byte as the end of the text, so `{…}\0garbage` would parse as
  // its prefix; a raw NUL is never valid JSON text.
  if (const size_t nul = line.find('\0'); nul != std::string_view::npos) {
    return core::MakeError(core::ErrorCode::kParse,
                           "parse error: a NUL byte at byte " + std::to_string(nul));
  }
  auto doc = std::make_shared<rapidjson::Document>();
  doc->Parse<kParseFlags>(line.data(), line.size());
  if (doc->HasParseError()) {
    return core::MakeError(core::ErrorCode::kParse,
                           std::string("parse error: ") +
                               rapidjson::GetParseError_En(doc->GetParseError()) +
                               " at byte " + std::to_string(doc->GetErrorOffset()));
  }
  if (!doc->IsObject()) {
    return core::MakeError(core::ErrorCode::kInvalidRequest,
                           "invalid request: a message must be a JSON object");
  }
  Envelope env;
  auto id = doc->FindMember("id");
  if (id != doc->MemberEnd()) {
    if (!(id->value.IsString() || id->value.IsNumber() || id->value.IsNull())) {
      return core::MakeError(core::ErrorCode::kInvalidRequest,
                             "invalid request: id must be a string, a number or null");
    }
    env.has_id = true;
    env.id_json = ToJson(id->value);
    *id_json = env.id_json;
  }
  auto version = doc->FindMember("jsonrpc");
  if (version == doc->MemberEnd() || !version->value.IsString() ||
      std::string_view(version->value.GetString(), version->value.GetStringLength()) != "2.0") {
    return core::MakeError(core::ErrorCode::kInvalidRequest,
                           "invalid request: jsonrpc must be \"2.0\"");
  }
  auto method = doc->FindMember("method");
  if (method == doc->MemberEnd() || !method->value.IsString()) {
    return core::MakeError(core::ErrorCode::kInvalidRequest,
                           "invalid request: method must be a string");
  }
  env.method.assign(method->value.GetString(), method->value.GetStringLength());
  auto params = doc->FindMember("params");
  if (params != doc->MemberEnd()) {
    if (!params->value.IsObject() && !params->value.IsArray()) {
      return core::MakeError(core::ErrorCode::kInvalidRequest,
                             "invalid request: params must be an object or an array");
    }
    env.params = &params->value;
  }
  env.doc = std::move(doc);
  return env;
}

std::string RecoverId(std::string_view prefix) {
  // Only a top-level "id" that appears before any nested object or array is trusted.
  int depth = 0;
  bool in_string = false;
  for (size_t i = 0; i < prefix.size(); ++i) {
    const char c = prefix[i];
    if (in_string) {
      if (c == '\\') {
        ++i;
      } else if (c == '"') {
        in_string = false;
      }
      continue;
    }
    if (c == '{' || c == '[') {
      if (++depth > 1) return "null";
      continue;
    }
    if (c != '"' || depth != 1) {
      if (c == '"') in_string = true;
      continue;
    }
    if (prefix.compare(i, 4, "\"id\"") != 0) {
      in_string = true;
      continue;
    }
    size_t j = i + 4;
    while (j < prefix.size() && (prefix[j] == ' ' || prefix[j] == '\t')) ++j;
    if (j >= prefix.size()) return "null";
    if (prefix[j] != ':') {  // the string "id" was a value, not the key
      i += 3;
      continue;
    }
    ++j;
    while (j < prefix.size() && (prefix[j] == ' ' || prefix[j] == '\t')) ++j;
    size_t k = j;
    if (k < prefix.size() && prefix[k] == '"') {
      for (++k; k < prefix.size() && prefix[k] != '"'; ++k) {
        if (prefix[k] == '\\') ++k;
      }
      if (k >= prefix.size()) return "null";
      ++k;
    } else {
      while (k < prefix.size() && (std::isdigit(static_cast<unsigned char>(prefix[k])) ||
                                   prefix[k] == '-' || prefix[k] == '.' || prefix[k] == 'e' ||
                                   prefix[k] == 'E' || prefix[k] == '+')) {
        ++k;
      }
    }
    rapidjson::Document id;
    id.Parse(prefix.data() + j, k - j);
    if (id.HasParseError() || !(id.IsString() || id.IsNumber())) return "null";
    return ToJson(id);
  }
  return "null";
}

std::string ResponseLine(const std::string& id_json, std::string_view result_json) {
  std::string line;
  line.reserve(result_json.size() + id_json.size() + 40);
  line.append("{\"jsonrpc\":\"2.0\",\"id\":").append(id_json).append(",\"result\":");
  line.append(result_json).append("}");
  return line;
}

std::string ErrorLine(const std::string& id_json, const core::Error& error) {
  std::string data = "{";
  const std::string_view epp = core::EppCodeName(error.code);
  auto add = [&](const std::string& member) {
    if (data.size() > 1) data += ",";
    data += member;
  };
  if (!epp.empty()) add("\"epp_code\":\"" + std::string(epp) + "\"");
  if (error.http_status) add("\"http_status\":" + std::to_string(error.http_status));
  // Messages, request ids and fields may carry bytes a server sent; the host reads UTF-8.
  if (!error.request_id.empty()) {
    add("\"request_id\":" + Quote(core::ToValidUtf8(error.request_id)));
  }
  if (error.retryable) add("\"retryable\":true");
  if (!error.field.empty()) add("\"field\":" + Quote(core::ToValidUtf8(error.field)));
  data += "}";
  std::string line = "{\"jsonrpc\":\"2.0\",\"id\":" + id_json + ",\"error\":{\"code\":" +
                     std::to_string(core::JsonRpcCode(error.code)) +
                     ",\"message\":" + Quote(core::ToValidUtf8(error.message));
  if (data.size() > 2) line += ",\"data\":" + data;
  line += "}}";
  return line;
}

std::string NotificationLine(std::string_view method, std::string_view params_json) {
  std::string line;
  line.reserve(params_json.size() + method.size() + 40);
  line.append("{\"jsonrpc\":\"2.0\",\"method\":\"").append(method).append("\",\"params\":");
  line.append(params_json).append("}");
  return line;
}

}  // namespace abx::epp
