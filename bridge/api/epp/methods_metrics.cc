// sandbox.metrics (extension)
#include "bridge/api/epp/methods.h"
#include "bridge/api/epp/params.h"
#include "bridge/api/epp/session.h"
#include "bridge/base/json.h"
#include "bridge/base/time_util.h"
#include "bridge/core/bridge_core.h"
#include "bridge/core/sandboxes/metrics.h"

namespace abx::epp {
namespace {

// Whole numbers print without a fraction ("cpu_count":2), others as rapidjson writes them.
std::string Number(double value) {
  rapidjson::Value v(value);
  if (value == static_cast<double>(static_cast<int64_t>(value))) v.SetInt64(static_cast<int64_t>(value));
  return json::ToJson(v);
}

}  // namespace

Result<std::string> SandboxMetrics(Request& req) {
  ABX_ASSIGN_OR_RETURN(std::string id, SandboxId(Params(req.params())));
  core::Metrics metrics(req.session().upstream().get(), &req.session().config());
  ABX_ASSIGN_OR_RETURN(opensandbox::SandboxMetrics sample, metrics.Sample(id, &req.cancel()));
  return "{\"cpu_count\":" + Number(sample.cpu_count) + ",\"cpu_used_pct\":" +
         Number(sample.cpu_used_pct) + ",\"mem_total_mib\":" + Number(sample.mem_total_mib) +
         ",\"mem_used_mib\":" + Number(sample.mem_used_mib) +
         ",\"at\":" + json::Quote(FormatRfc3339Millis(sample.timestamp_ms)) + "}";
}

}  // namespace abx::epp
