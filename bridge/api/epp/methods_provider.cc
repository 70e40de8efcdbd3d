// provider.info and provider.doctor. Neither ever shows a secret.
#include <cstdlib>
#include <unistd.h>

#include "bridge/api/epp/features.h"
#include "bridge/api/epp/methods.h"
#include "bridge/api/epp/params.h"
#include "bridge/api/epp/session.h"
#include "bridge/base/json.h"
#include "bridge/base/time_util.h"
#include "bridge/core/bridge_core.h"
#include "bridge/core/exec/diagnostics.h"
#include "bridge/core/exec/exec.h"
#include "bridge/core/sandboxes/sandboxes.h"
#include "bridge/core/sandboxes/warm_pool.h"
#include "common/build_id.h"
#include "common/version.h"

namespace abx::epp {
namespace {

using json::Quote;

constexpr int64_t kMaxHealthySkewMs = 60000;

std::string List(const char* const* items, size_t n) {
  std::vector<std::string> v(items, items + n);
  return json::ArrayOfStrings(v);
}

struct Check {
  std::string name;
  bool ok;
  std::string detail;
};

}  // namespace

// provider.info's "pool": {"<template>":{"target","ready","creating","taken","last_error"}}.
std::string PoolJson(const std::map<std::string, core::PoolState>& states) {
  std::string out = "{";
  for (const auto& [name, s] : states) {
    if (out.size() > 1) out += ",";
    out += Quote(name) + ":{\"target\":" + std::to_string(s.target) + ",\"ready\":" + std::to_string(s.ready) +
           ",\"creating\":" + std::to_string(s.creating) + ",\"taken\":" + std::to_string(s.taken) +
           ",\"last_error\":" + (s.last_error.empty() ? std::string("null") : Quote(s.last_error)) + "}";
  }
  return out + "}";
}

Result<std::string> ProviderInfo(Request& req) {
  Session& s = req.session();
  const core::BridgeCore::Counters c = s.core().counters();
  std::string out = "{\"provider\":{\"name\":" + Quote(kProviderName) + ",\"version\":" +
                    Quote(kProviderVersion) + "},\"shim\":{\"version\":" +
                    Quote(s.origin().shim_version) + ",\"pid\":" + std::to_string(s.origin().shim_pid) +
                    "},\"bridge\":{\"version\":" + Quote(kProviderVersion) + ",\"build_id\":" +
                    Quote(kBuildId) + ",\"pid\":" + std::to_string(getpid()) + "},\"features\":" +
                    List(kFeatures, std::size(kFeatures)) + ",\"partial\":" + PartialJson() +
                    ",\"extensions\":" +
                    List(kExtensions, std::size(kExtensions)) + ",\"config\":" +
                    core::EffectiveConfigJson(s.origin().config, s.config());
  std::map<std::string, std::string> sources;
  for (const auto& [field, source] : s.origin().config_source) sources[field] = source;
  out += ",\"config_source\":" + json::ObjectOfStrings(sources);
  out += ",\"counters\":{\"requests_total\":" + std::to_string(c.requests_total) +
         ",\"upstream_requests\":" + std::to_string(c.upstream_requests) +
         ",\"upstream_connections\":" + std::to_string(c.upstream_connections) +
         ",\"cached_sandboxes\":" + std::to_string(c.cached_sandboxes) +
         ",\"streams_active\":" + std::to_string(c.streams_active) + "}";
  out += ",\"pool\":" + PoolJson(WarmPoolOf(s.core()).States(s.config())) + "}";
  return out;
}

Result<std::string> ProviderDoctor(Request& req) {
  Session& s = req.session();
  std::vector<Check> checks;
  std::string configuration = "valid; server " + core::WithoutUserInfo(s.config().lifecycle_url);
  auto entrypoint = s.origin().config.find("entrypoint");
  if (entrypoint != s.origin().config.end() && entrypoint->second.find_first_not_of(" \t") != std::string::npos) {
    // docs/epp1.md §3, code.interpret: a code-interpreter image keeps its own script.
    configuration += "; the configured entrypoint applies to stock images, not to code-interpreter "
                     "images, which start their own script unless the create call names one";
  }
  checks.push_back({"configuration", true, configuration});
  checks.push_back({"bridge", true, "pid " + std::to_string(getpid()) + ", build " + kBuildId});

  core::ServerProbe server = core::ProbeServer(*s.upstream(), s.config(), &req.cancel());
  const Result<int64_t>& server_now = server.server_now_ms;
  const int64_t local_now = server.local_now_ms;
  checks.push_back({"server_reachable", server_now.ok(),
                    server_now.ok() ? "GET /health answered" : server_now.error().message});
  if (server_now.ok()) {
    const int64_t skew = *server_now - local_now;
    checks.push_back({"clock_skew", std::llabs(skew) <= kMaxHealthySkewMs,
                      "server clock is " + std::to_string(skew / 1000) +
                          " s from this host's (timeouts use the server's clock)"});
  }
  const Status& auth = server.auth;
  checks.push_back({"api_key", auth.ok(),
                    auth.ok() ? (s.config().api_key.empty() ? "no key set; the server accepted that"
                                                            : "accepted by the server")
                              : auth.error().message});

  ABX_ASSIGN_OR_RETURN(auto probe_param, Params(req.params()).String("sandbox_id"));
  std::string probe = probe_param.value_or("");
  if (probe.empty() && auth.ok()) {
    core::Sandboxes sandboxes(s.upstream().get(), &s.config());
    auto running = sandboxes.List({"Running"}, {}, 1, "", &req.cancel());
    if (running.ok() && !running->sandboxes.empty()) probe = running->sandboxes[0].record.id;
  }
  if (probe.empty()) {
    checks.push_back({"execd_version", true, "no running sandbox to probe"});
  } else {
    auto legacy = core::ProbeLegacyExecd(*s.upstream(), s.config(), probe, &req.cancel());
    checks.push_back({"execd_version", legacy.ok(),
                      !legacy.ok() ? legacy.error().message
                      : *legacy    ? "sandbox " + probe + ": legacy execd (v1.0.16 or older): blank output lines are dropped"
                                   : "sandbox " + probe + ": execd v1.0.17 or newer: blank lines kept"});
  }
  if (!s.config().pool.empty()) {
    // The warm pool: a refill that keeps failing (quota, image pull) shows here.
    bool refills_ok = true;
    std::string detail;
    for (const auto& [name, state] : WarmPoolOf(s.core()).States(s.config())) {
      if (!detail.empty()) detail += "; ";
      detail += name + ": " + std::to_string(state.ready) + " of " + std::to_string(state.target) + " ready";
      if (state.creating) detail += ", " + std::to_string(state.creating) + " starting";
      if (!state.last_error.empty()) {
        refills_ok = false;
        detail += ", refills failing: " + state.last_error;
      }
    }
    checks.push_back({"pool", refills_ok, detail.empty() ? "configured, not started yet" : detail});
  }

  bool all_ok = true;
  std::string list = "[";
  for (size_t i = 0; i < checks.size(); ++i) {
    all_ok = all_ok && checks[i].ok;
    list += std::string(i ? "," : "") + "{\"name\":" + Quote(checks[i].name) + ",\"ok\":" +
            (checks[i].ok ? "true" : "false") + ",\"detail\":" + Quote(checks[i].detail) + "}";
  }
  return std::string("{\"ok\":") + (all_ok ? "true" : "false") + ",\"checks\":" + list + "]}";
}

}  // namespace abx::epp
