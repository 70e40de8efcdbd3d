#include "bridge/api/grpc/bridge_service.h"

#include <algorithm>
#include <chrono>
#include <fstream>
#include <string>
#include <unistd.h>

#include "bridge/api/grpc/pool_state_proto.h"
#include "bridge/base/log.h"
#include "bridge/core/sandboxes/warm_pool.h"
#include "common/build_id.h"
#include "common/version.h"

namespace abx::api {
namespace {

grpc::ServerUnaryReactor* Answered(grpc::CallbackServerContext* context) {
  grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
  reactor->Finish(grpc::Status::OK);
  return reactor;
}

}  // namespace

int64_t PeakRssBytes() {
  std::ifstream status("/proc/self/status");
  std::string key;
  while (status >> key) {
    if (key == "VmHWM:") {
      int64_t kib = 0;
      status >> kib;
      return kib * 1024;
    }
    status.ignore(1 << 16, '\n');
  }
  return 0;
}

grpc::ServerUnaryReactor* BridgeService::Hello(grpc::CallbackServerContext* context, const abx::opensandbox::v1::HelloRequest*,
                                  abx::opensandbox::v1::HelloReply* reply) {
  reply->set_build_id(kBuildId);
  reply->set_version(kProviderVersion);
  reply->set_pid(getpid());
  reply->set_uptime_seconds(state_->uptime_seconds());
  return Answered(context);
}

grpc::ServerUnaryReactor* BridgeService::Stats(grpc::CallbackServerContext* context, const abx::opensandbox::v1::StatsRequest*,
                                  abx::opensandbox::v1::StatsReply* reply) {
  const core::BridgeCore::Counters counters = state_->core().counters();
  reply->set_build_id(kBuildId);
  reply->set_version(kProviderVersion);
  reply->set_pid(getpid());
  reply->set_uptime_seconds(state_->uptime_seconds());
  reply->set_sessions_active(state_->sessions_active());
  reply->set_sessions_total(state_->sessions_total());
  reply->set_requests_total(counters.requests_total);
  reply->set_upstream_requests(counters.upstream_requests);
  reply->set_upstream_connections(counters.upstream_connections);
  reply->set_cached_sandboxes(counters.cached_sandboxes);
  reply->set_streams_active(counters.streams_active);
  reply->set_peak_rss_bytes(PeakRssBytes());
  reply->set_draining(state_->draining());
  reply->set_early_writes_used(counters.early_writes_used);
  reply->set_early_writes_dropped(counters.early_writes_dropped);
  for (const auto& pool : WarmPoolOf(state_->core()).AllStates()) ToProto(state_->core(), pool, reply->add_pools());
  return Answered(context);
}

grpc::ServerUnaryReactor* BridgeService::Stop(grpc::CallbackServerContext* context, const abx::opensandbox::v1::StopRequest*,
                                 abx::opensandbox::v1::StopReply* reply) {
  log::Info("bridge.stop_requested");
  reply->set_in_flight(state_->sessions_active());
  state_->StartDraining();
  return Answered(context);
}

grpc::ServerUnaryReactor* BridgeService::ListCachedSandboxes(grpc::CallbackServerContext* context, const abx::opensandbox::v1::ListCachedSandboxesRequest*,
    abx::opensandbox::v1::ListCachedSandboxesReply* reply) {
  const auto now = std::chrono::steady_clock::now();
  auto age = [&](std::chrono::steady_clock::time_point since) {
    return static_cast<int64_t>(
        std::chrono::duration_cast<std::chrono::seconds>(now - since).count());
  };
  for (const core::BridgeCore::CachedSandbox& cached : state_->core().CachedSandboxes()) {
    auto* sandbox = reply->add_sandboxes();
    sandbox->set_sandbox_id(cached.sandbox_id);
    sandbox->set_server(cached.server);
    sandbox->set_credential(cached.credential);
    int64_t oldest = 0;
    for (const core::EndpointCache::CachedEndpoint& endpoint : cached.endpoints) {
      auto* out = sandbox->add_endpoints();
      out->set_url(endpoint.base_url);
      out->set_access(endpoint.server_proxy ? "server_proxy" : "direct");
      out->set_age_seconds(age(endpoint.since));
      oldest = std::max(oldest, out->age_seconds());
      if (!endpoint.execd_version.empty()) sandbox->set_execd_version(endpoint.execd_version);
    }
    sandbox->set_age_seconds(oldest);
  }
  return Answered(context);
}

}  // namespace abx::api
