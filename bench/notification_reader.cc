#include "bench/notification_reader.h"

// RapidJSON scans strings 16 bytes at a time with SSE2 here, in a namespace of its own (as
// the bridge's event parser does) so its templates are not merged with the plain ones the
// rest of the benchmark uses. That scan takes 0x1A-0x1F for text; the lines it reads here
// come from the provider, whose JSON the end-to-end tests check.
#if defined(__SSE4_2__)
#define RAPIDJSON_SSE42
#elif defined(__SSE2__)
#define RAPIDJSON_SSE2
#endif
#define RAPIDJSON_NAMESPACE abx_bench_rapidjson
#define RAPIDJSON_NAMESPACE_BEGIN namespace abx_bench_rapidjson {
#define RAPIDJSON_NAMESPACE_END }
#include <rapidjson/document.h>

#include <cstring>

namespace abx::bench {
namespace rapidjson = ::abx_bench_rapidjson;

NotificationFacts ReadNotification(char* line) {
  NotificationFacts facts;
  rapidjson::Document doc;
  doc.ParseInsitu(line);
  if (doc.HasParseError() || !doc.IsObject()) return facts;
  auto method = doc.FindMember("method");
  auto params = doc.FindMember("params");
  if (method == doc.MemberEnd() || !method->value.IsString() || params == doc.MemberEnd() ||
      !params->value.IsObject()) {
    return facts;
  }
  const rapidjson::Value& p = params->value;
  if (std::strcmp(method->value.GetString(), "exec.output") == 0) {
    facts.kind = NotificationFacts::Kind::kOutput;
    auto data = p.FindMember("data");
    if (data != p.MemberEnd() && data->value.IsString()) facts.data_bytes = data->value.GetStringLength();
  } else if (std::strcmp(method->value.GetString(), "exec.exit") == 0) {
    facts.kind = NotificationFacts::Kind::kExit;
    auto code = p.FindMember("exit_code");
    if (code != p.MemberEnd() && code->value.IsInt()) {
      facts.has_exit_code = true;
      facts.exit_code = code->value.GetInt();
    }
  }
  return facts;
}

}  // namespace abx::bench
