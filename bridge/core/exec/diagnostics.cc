#include "bridge/core/exec/diagnostics.h"

#include <optional>

#include "bridge/base/time_util.h"
#include "bridge/core/exec/exec.h"

namespace abx::core {

ServerProbe ProbeServer(EndpointCache& cache, const ProviderConfig& config,
                        const CancelToken* cancel) {
  opensandbox::LifecycleClient lifecycle = cache.Lifecycle(config);
  const int64_t before = NowMillis();
  Result<int64_t> server_now = lifecycle.ServerNowMillis(cancel);
  const int64_t local_now = (before + NowMillis()) / 2;
  Status auth = lifecycle.CheckAuth(cancel);
  return ServerProbe{std::move(server_now), local_now, std::move(auth)};
}

Result<bool> ProbeLegacyExecd(EndpointCache& cache, const ProviderConfig& config,
                              const std::string& sandbox_id, CancelToken* cancel) {
  auto execd = cache.Execd(sandbox_id, config, cancel);
  if (!execd.ok()) return execd.error();
  int lines = 0;
  bool ended = false;
  Status st = execd->RunCommand(
      CommandBody("printf 'a\\n\\nb\\n'", "", false, 10000, std::nullopt, std::nullopt, {}),
      cancel, 20000,
      [&](const opensandbox::ExecdEvent& e) {
        if (e.type == "stdout") ++lines;
        ended = e.type == "execution_complete" || e.type == "error";
        return !ended;
      },
      [] {});
  if (!st.ok()) return st.error();
  if (!ended) return MakeError(ErrorCode::kUnreachable, "the probe's stream broke");
  const bool legacy = lines == 2;
  cache.NoteExecdVersion(sandbox_id, legacy ? "v1.0.16 or older" : "v1.0.17 or newer");
  return legacy;
}

}  // namespace abx::core
