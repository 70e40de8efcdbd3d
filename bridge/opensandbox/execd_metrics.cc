#include "bridge/opensandbox/execd_metrics.h"

#include <cmath>

#include <rapidjson/document.h>

#include "bridge/base/json.h"

namespace abx::opensandbox {

Result<SandboxMetrics> DecodeMetrics(const std::string& body) {
  rapidjson::Document doc;
  doc.Parse<json::kParseFlags>(body.c_str(), body.size());
  auto not_its_api = [] {
    return MakeError(ErrorCode::kUpstream, "metrics: execd answered something that is not its API");
  };
  if (doc.HasParseError() || !doc.IsObject()) return not_its_api();
  SandboxMetrics out;
  const std::pair<const char*, double*> numbers[] = {{"cpu_count", &out.cpu_count},
                                                     {"cpu_used_pct", &out.cpu_used_pct},
                                                     {"mem_total_mib", &out.mem_total_mib},
                                                     {"mem_used_mib", &out.mem_used_mib}};
  for (const auto& [key, target] : numbers) {
    const rapidjson::Value* v = json::GetMember(doc, key);
    if (v == nullptr || !v->IsNumber() || !std::isfinite(v->GetDouble())) return not_its_api();
    *target = v->GetDouble();
  }
  const rapidjson::Value* stamp = json::GetMember(doc, "timestamp");
  if (stamp == nullptr || !stamp->IsNumber()) return not_its_api();
  out.timestamp_ms = stamp->IsInt64() ? stamp->GetInt64() : static_cast<int64_t>(stamp->GetDouble());
  return out;
}

}  // namespace abx::opensandbox
